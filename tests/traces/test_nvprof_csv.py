"""nvprof --print-gpu-trace --csv reader: real file against csv-module counts, units, runs, variants."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.nvprof_csv import read_nvprof_csv

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
CSVS = sorted(TRACES.glob("nvprof-gputrace-csv_*.csv"))

BINARY = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}


def rows_of(path: Path) -> list[dict[str, str]]:
    """Data rows with a '_size_unit' key, read with the csv module independently of the reader."""
    rows, header, unit = [], None, None
    for record in csv.reader(path.read_text().splitlines()):
        if record[:2] == ["Start", "Duration"]:
            header, unit = record, None
        elif header and unit is None:
            unit = dict(zip(header, record, strict=True))["Size"]
        elif header:
            rows.append({**dict(zip(header, record, strict=True)), "_size_unit": unit})
    return rows


@pytest.mark.parametrize("path", CSVS, ids=lambda p: p.name)
def test_counts_and_bytes_match_csv(path):
    """Kernels, memsets and copies per direction (count, bytes with binary KB/MB/GB) equal the file's rows."""
    rows = rows_of(path)
    trace = read_nvprof_csv(path)
    kind = trace["kind"]
    assert np.sum(kind == OpKind.KERNEL) == sum(not r["Name"].startswith("[") for r in rows)
    assert np.sum(kind == OpKind.MEMSET) == sum(r["Name"] == "[CUDA memset]" for r in rows)
    for label, direction in (("HtoD", CopyKind.HTOD), ("DtoH", CopyKind.DTOH), ("DtoD", CopyKind.DTOD)):
        mine = [r for r in rows if r["Name"] == f"[CUDA memcpy {label}]"]
        sel = trace["copy_kind"] == direction
        assert sel.sum() == len(mine)
        assert trace["bytes"][sel].sum() == sum(round(float(r["Size"]) * BINARY[r["_size_unit"]]) for r in mine)


def test_kb_means_1024_bytes(shared_traces):
    """512x256 floats (524,288 B) are printed as 512 KB: the first copy has 524,288 bytes."""
    trace = read_nvprof_csv(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv")
    first_copy = np.flatnonzero(trace["kind"] == OpKind.MEMCPY)[0]
    assert trace["bytes"][first_copy] == 512 * 256 * 4
    kernels = trace["kind"] == OpKind.KERNEL
    assert sorted(set((trace["grid_x"][kernels] * trace["block_x"][kernels] * 4).tolist())) == sorted(
        set(trace["bytes"][trace["copy_kind"] == CopyKind.HTOD].tolist()))


def test_kernel_names_correlation_and_device(shared_traces):
    """The ' [97]' suffix becomes the correlation id; the Device column gives 'Tesla K40c' on device 0."""
    trace = read_nvprof_csv(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv")
    kernels = trace["kind"] == OpKind.KERNEL
    assert set(trace.kernel_names()[kernels]) == {"VecAdd(float*, float*, int)"}
    assert np.all(trace["correlation"][kernels] == 97)
    assert trace.meta.gpus == {0: "Tesla K40c"}
    assert np.all(trace["src_mem"] == MemKind.UNKNOWN)  # this nvprof prints no memory kinds


def test_runs_do_not_overlap(shared_traces):
    """The 12 concatenated runs (separate time origins) are laid one after another without overlap."""
    path = shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv"
    trace = read_nvprof_csv(path)
    assert np.all(trace["start_ns"][1:] >= trace["end_ns"][:-1])
    assert trace.meta.notes[0].startswith("12 runs concatenated (12 header blocks), each timed from its own start")
    durations = sorted((trace["end_ns"] - trace["start_ns"]).tolist())
    expected = sorted(round(float(r["Duration"]) * 1e9) for r in rows_of(path))
    assert durations == expected  # shifting moves runs, never stretches ops


def test_unit_notes_agree_in_number(shared_traces):
    """The size-unit notes count runs in words that agree ("1 run prints ... its rows"; it read "1 run(s) print ...
    theirs"): they are printed with replay's and forecast's notes."""
    notes = read_nvprof_csv(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv").meta.notes
    assert any(n.startswith("1 run prints sizes with a unit prefix that none of its rows tells decimal from binary")
               for n in notes), notes


def test_newer_columns_memory_kinds_memset_and_skips(tmp_path):
    """SrcMemType/DstMemType, Correlation_ID, memsets, unified-memory rows and ==PROF== lines are handled."""
    text = "\n".join([
        "==1234== NVPROF is profiling process 1234, command: ./app",
        "==1234== Profiling result:",
        '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
        '"Static SMem","Dynamic SMem","Size","Throughput","SrcMemType","DstMemType","Device","Context","Stream",'
        '"Name","Correlation_ID"',
        "us,us,,,,,,,,KB,KB,KB,GB/s,,,,,,,",
        '0.000000,1.888000,,,,,,,,,,1.003906,0.507097,"Device",,"GeForce RTX 2080 Ti (0)","1","7","[CUDA memset]",272',
        '4643.346000,1.536000,,,,,,,,,,0.125000,0.077610,"Pinned","Device","GeForce RTX 2080 Ti (0)","1","22",'
        '"[CUDA memcpy HtoD]",316',
        '4650.000000,3.000000,4,1,1,128,1,1,16,0,0,,,,,"GeForce RTX 2080 Ti (0)","1","22","kern(int) [999]",317',
        '4700.000000,2.000000,,,,,,,,,,4.000000,1.0,,,"GeForce RTX 2080 Ti (0)","1","22",'
        '"[Unified Memory Memcpy DtoH]",0',
        '4800.000000,1.000000,,,,,,,,,,,,,,"GeForce RTX 2080 Ti (0)","1","22","[Unified Memory GPU page faults]",0',
    ])
    path = tmp_path / "new.csv"
    path.write_text(text)
    trace = read_nvprof_csv(path)
    assert trace.counts() == {"kernel": 1, "memcpy": 2, "memset": 1}
    memset = np.flatnonzero(trace["kind"] == OpKind.MEMSET)[0]
    assert (trace["bytes"][memset], trace["dst_mem"][memset], trace["correlation"][memset]) == (1028, MemKind.DEVICE, 272)
    htod = np.flatnonzero(trace["copy_kind"] == CopyKind.HTOD)[0]
    assert (trace["bytes"][htod], trace["src_mem"][htod], trace["dst_mem"][htod]) == (128, MemKind.PINNED, MemKind.DEVICE)
    assert trace["start_ns"][htod] == 4_643_346  # us -> ns
    kernel = np.flatnonzero(trace["kind"] == OpKind.KERNEL)[0]
    assert trace["correlation"][kernel] == 317  # the column wins over the [999] suffix
    assert trace.kernel_names()[kernel] == "kern(int)"
    uvm = np.flatnonzero(trace["copy_kind"] == CopyKind.UVM_DTOH)[0]
    assert (trace["bytes"][uvm], trace["src_mem"][uvm]) == (4096, MemKind.MANAGED)
    assert any("skipped 1 rows" in n for n in trace.meta.notes)


def test_missing_units_row(tmp_path):
    """A header not followed by a units row is an InputError that says so."""
    path = tmp_path / "bad.csv"
    path.write_text('"Start","Duration","Size","Device","Stream","Name"\n1.0,2.0,,"GPU (0)","7","k"\n')
    with pytest.raises(InputError, match="units row"):
        read_nvprof_csv(path)


def test_bad_number(tmp_path):
    """A non-numeric Start value is an InputError naming the column and the line."""
    path = tmp_path / "bad.csv"
    path.write_text('"Start","Duration","Size","Device","Stream","Name"\ns,s,B,,,\nabc,2.0,,"GPU (0)","7","k"\n')
    with pytest.raises(InputError, match=r"bad\.csv: Start, line 3: 'abc' is not a number"):
        read_nvprof_csv(path)


def test_api_trace_blocks_are_ignored(tmp_path):
    """A --print-api-trace block (no Device column) adds no ops, only a note."""
    path = tmp_path / "both.csv"
    path.write_text(
        '"Start","Duration","Size","Device","Stream","Name"\n'
        's,s,B,,,\n'
        '1.0,0.5,,"Tesla T4 (0)","7","k(int) [12]"\n'
        '"Start","Duration","Name","Correlation_ID"\n'
        's,s,,\n'
        '0.9,0.01,"cudaLaunchKernel",12\n'
    )
    trace = read_nvprof_csv(path)
    assert trace.counts() == {"kernel": 1}
    assert any("API-trace rows" in n for n in trace.meta.notes)


# -- truncated or damaged files ------------------------------------------------------------------------------

_HEADER = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
           '"Static SMem","Dynamic SMem","Size","Throughput","Device","Context","Stream","Name"\n'
           "s,s,,,,,,,,B,B,MB,GB/s,,,,\n")
_COPY = '1.996763,2.821508e-03,,,,,,,,,,16.000000,5.537819,"Tesla K40c (0)","1","7","[CUDA memcpy HtoD]"\n'
_KERNEL = '1.999590,6.656000e-05,16384,1,1,256,1,1,8,0,0,,,"Tesla K40c (0)","1","7","VecAdd(float*, float*, int) [97]"\n'


def test_small_file_loads(tmp_path):
    """The file the truncation tests cut short loads whole: one copy, one kernel."""
    path = tmp_path / "ok.csv"
    path.write_text(_HEADER + _COPY + _KERNEL)
    assert read_nvprof_csv(path).counts() == {"kernel": 1, "memcpy": 1}


@pytest.mark.parametrize(
    ("cut", "reason"),
    [
        (len(_COPY) - 20, "ends inside a quoted field"),
        (12, "has 2 of the header's 17 fields"),
    ],
)
def test_truncated_file_is_refused(tmp_path, cut, reason):
    """A file cut inside its last row is an error giving the line (the row was silently dropped or shortened)."""
    path = tmp_path / "cut.csv"
    path.write_text("==1== NVPROF is profiling\n" + _HEADER + _KERNEL + _COPY[:cut])
    with pytest.raises(InputError, match=rf"cut\.csv: the file looks truncated: its last row \(line 5\) {reason}"):
        read_nvprof_csv(path)


@pytest.mark.parametrize(("duration", "message"), [("inf", "Duration, line 3: 'inf' is infinite"),
                                                    ("1e400", "Duration, line 3: '1e400' is infinite"),
                                                    ("nan", r"Duration, line 3: 'nan' is not a number \(NaN\)"),
                                                    ("5e9", r"Duration, line 3: '5e9' is out of range \(must be >= "
                                                            r"-4\.61169e\+09 and <= 4\.61169e\+09\)"),
                                                    ("-0.5", r"1 of 1 GPU ops end before they start")])
def test_bad_duration(tmp_path, duration, message):
    """An infinite duration is an InputError (it was an OverflowError traceback); a negative one too."""
    path = tmp_path / "bad.csv"
    path.write_text(_HEADER + _COPY.replace("2.821508e-03", duration))
    with pytest.raises(InputError, match=message):
        read_nvprof_csv(path)


# -- nvprof's "No kernels were profiled." trailer (issue 10, item 3) -----------------------------------------

KERNEL_ZOO = TRACES.parent / "kernel-zoo"
TRAILER = "No kernels were profiled.\n"


def zoo(name: str) -> str:
    """The text of a real kernel-zoo file; skips the test when ../shared/data/kernel-zoo is absent."""
    if not KERNEL_ZOO.is_dir():
        pytest.skip(f"{KERNEL_ZOO} is absent (real inputs live beside the repository, not in a clone)")
    return (KERNEL_ZOO / name).read_text()


@pytest.mark.parametrize("layout", ["end", "between-runs", "both", "before-header"])
def test_no_kernels_trailer_is_accepted_wherever_nvprof_writes_it(tmp_path, layout):
    """nvprof's one-field trailer at the end, after a run's rows or before the first header reads as no row
    (at the end or between runs it was refused as a truncated file or an unreadable Start)."""
    run = zoo("GTX-680/quicksort-8192.csv")  # one run: HtoD copy, quicksort kernel, DtoH copy
    text = {"end": run + TRAILER, "between-runs": run + TRAILER + run, "both": run + TRAILER + run + TRAILER * 2,
            "before-header": TRAILER + run}[layout]
    path = tmp_path / "trailer.csv"
    path.write_text(text)
    trace = read_nvprof_csv(path)
    runs = 1 if layout in ("end", "before-header") else 2
    assert trace.counts() == {"kernel": runs, "memcpy": 2 * runs}
    assert trace["bytes"][trace["kind"] == OpKind.MEMCPY].tolist() == [65536] * (2 * runs)  # 64 KB, binary
    trailers = text.count(TRAILER)
    said = f"{trailers} run printed" if trailers == 1 else f"{trailers} runs printed"
    assert any(f"{said} nvprof's 'No kernels were profiled.'" in n for n in trace.meta.notes)


def test_real_file_ending_in_trailers_loads(tmp_path):
    """A kernel-zoo file as nvprof wrote it, one run with rows then 24 runs that profiled nothing, loads its 4 ops."""
    text = zoo("GTX-680/vectorAdd-167772160.csv")
    assert text.count(TRAILER) == 24
    trace = read_nvprof_csv(KERNEL_ZOO / "GTX-680/vectorAdd-167772160.csv")
    assert trace.counts() == {"kernel": 1, "memcpy": 3}


def test_truncated_run_after_a_trailer_is_still_refused(tmp_path):
    """A file cut inside its last row is refused even when a trailer line came before the cut run."""
    run = zoo("GTX-680/quicksort-8192.csv")
    path = tmp_path / "cut.csv"
    path.write_text(run + TRAILER + run[:-10])  # inside the last quoted Name
    with pytest.raises(InputError, match=r"cut\.csv: the file looks truncated: its last row \(line 11\) ends inside "
                                         r"a quoted field"):
        read_nvprof_csv(path)
    path.write_text(run + TRAILER + run.rsplit(",", 8)[0] + "\n" + TRAILER)
    with pytest.raises(InputError, match=r"cut\.csv: the file looks truncated: its last row \(line 11\) has 9 of "
                                         r"the header's 17 fields"):
        read_nvprof_csv(path)


@pytest.mark.parametrize(("old", "new", "message"), [
    ('"1","7","[CUDA', '"1","seven","[CUDA', r"Stream, line 3: 'seven' is not an integer"),
    ('"1","7","[CUDA', '"1","-7","[CUDA', r"Stream, line 3: '-7' is out of range \(must be >= 0\)"),
    ("16.000000", "1e400", r"Size, line 3: '1e400' is infinite"),
])
def test_damaged_fields_name_column_and_line(tmp_path, old, new, message):
    """A stream id that is not a number >= 0 (it silently read as 'no stream') or an infinite size names its line."""
    path = tmp_path / "bad.csv"
    path.write_text(_HEADER + _COPY.replace(old, new))
    with pytest.raises(InputError, match=rf"^{path}: {message}"):
        read_nvprof_csv(path)


# -- size units: decimal or binary, told from the data (issue 11, deliverable 2) ---------------------------------

ZOO_GPUS = ("GTX-680", "Titan", "Tesla-K20", "GTX-970")


def zoo_files(gpu: str) -> list[Path]:
    """Every kernel-zoo file of one GPU; skips when the kernel zoo is absent."""
    if not KERNEL_ZOO.is_dir():
        pytest.skip(f"{KERNEL_ZOO} is absent (real inputs live beside the repository, not in a clone)")
    return sorted((KERNEL_ZOO / gpu).glob("*.csv"))


@pytest.mark.parametrize(("gpu", "decimal", "binary", "cannot_tell"),
                         [("GTX-680", 0, 357, 2), ("Titan", 579, 0, 15), ("Tesla-K20", 0, 588, 6),
                          ("GTX-970", 0, 588, 6)])
def test_size_base_per_gpu(gpu, decimal, binary, cannot_tell):
    """The TITAN files print sizes in decimal units, the other three GPUs' in binary; the runs whose Size and
    Throughput share a prefix (GB, GB/s) cannot tell and say so."""
    counts = {"decimal": 0, "binary": 0, "cannot tell": 0}
    for path in zoo_files(gpu):
        notes = " ".join(read_nvprof_csv(path).meta.notes)
        if "decimal units (1 KB = 1000 B)" in notes:
            counts["decimal"] += 1
        elif "binary units (1 KB = 1024 B): Size / Duration equals Throughput" in notes:
            counts["binary"] += 1
        elif "rows tells decimal from binary" in notes:
            counts["cannot tell"] += 1
    assert counts == {"decimal": decimal, "binary": binary, "cannot tell": cannot_tell}


def test_same_program_copies_the_same_bytes_on_every_gpu():
    """A program run with one input copies the same bytes on all four GPUs, the TITAN's decimal '262.144000 KB'
    included (read as 1024 B per KB, it was 268,435 B where the other GPUs' '256.000000 KB' is 262,144 B)."""
    compared = 0
    for path in zoo_files("Titan"):
        titan = read_nvprof_csv(path)
        if any("rows tells decimal from binary" in n for n in titan.meta.notes):
            continue  # GB and GB/s: this file alone cannot tell (test_size_base_per_gpu)
        want = titan["bytes"][titan["kind"] == OpKind.MEMCPY].tolist()
        for gpu in ("GTX-680", "Tesla-K20", "GTX-970"):
            other = KERNEL_ZOO / gpu / path.name
            if not other.exists():
                continue
            trace = read_nvprof_csv(other)
            if any("rows tells decimal from binary" in n for n in trace.meta.notes):
                continue
            assert trace["bytes"][trace["kind"] == OpKind.MEMCPY].tolist() == want, (gpu, path.name)
            compared += 1
    assert compared > 1500


def test_titan_65536_int_copy_is_262144_bytes():
    """'262.144000' KB in a decimal TITAN file is 262,144 bytes (65,536 ints), as '256.000000' KB on the GTX 680."""
    text = zoo("Titan/bitonic-32768.csv")
    assert "262.144000" in text
    titan = read_nvprof_csv(KERNEL_ZOO / "Titan/bitonic-32768.csv")
    gtx = read_nvprof_csv(KERNEL_ZOO / "GTX-680/bitonic-32768.csv")
    for trace in (titan, gtx):
        assert trace["bytes"][trace["kind"] == OpKind.MEMCPY].tolist() == [262144, 262144]


def test_occupancy_columns_of_kernel_rows():
    """Kernel rows keep Registers Per Thread and Static/Dynamic SMem (bytes); copies leave them not recorded."""
    assert "1.639200e+04,0.000000" in zoo("Titan/subSeqMax-1048576.csv")  # Static SMem in B, Dynamic in KB
    trace = read_nvprof_csv(KERNEL_ZOO / "Titan/subSeqMax-1048576.csv")
    k = trace["kind"] == OpKind.KERNEL
    assert trace["registers_per_thread"][k].tolist() == [24]
    assert trace["static_smem_bytes"][k].tolist() == [16392]
    assert trace["dynamic_smem_bytes"][k].tolist() == [0]  # '0.000000' KB
    assert trace["local_mem_per_thread_bytes"][k].tolist() == [-1]  # the CSV has no such column
    assert (trace["registers_per_thread"][~k] == -1).all() and (trace["static_smem_bytes"][~k] == -1).all()
    quick = read_nvprof_csv(KERNEL_ZOO / "GTX-970/quicksort-8192.csv")
    kq = quick["kind"] == OpKind.KERNEL
    assert quick["dynamic_smem_bytes"][kq].tolist() == [128]
    assert quick["registers_per_thread"][kq].tolist() == [24]


_UNITS_HEADER = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z",'
                 '"Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","Device","Context",'
                 '"Stream","Name"\n')


@pytest.mark.parametrize(("size", "rate", "smem", "want_copy", "want_smem"), [
    ("262.144000", "10.569896", "2.048000", 262144, 2048),  # decimal: 262,144 B / 24.801 us = 10.57e9 B/s
    ("256.000000", "9.843989", "2.000000", 262144, 2048),  # binary: same bytes, 9.84 x 2^30 B/s
])
def test_dynamic_smem_in_kb_follows_the_runs_base(tmp_path, size, rate, smem, want_copy, want_smem):
    """A run's Dynamic SMem in KB uses the base its copies show (built here in nvprof's documented layout)."""
    path = tmp_path / "units.csv"
    path.write_text(_UNITS_HEADER + "s,s,,,,,,,,B,KB,KB,GB/s,,,,\n"
                    f'0.1,2.480100e-05,,,,,,,,,,{size},{rate},"GeForce GTX TITAN (0)","1","7","[CUDA memcpy HtoD]"\n'
                    f'0.2,1.0e-05,4,1,1,128,1,1,8,0,{smem},,,"GeForce GTX TITAN (0)","1","7","k(int*) [9]"\n')
    trace = read_nvprof_csv(path)
    assert trace["bytes"][trace["kind"] == OpKind.MEMCPY].tolist() == [want_copy]
    assert trace["dynamic_smem_bytes"][trace["kind"] == OpKind.KERNEL].tolist() == [want_smem]


def test_fractional_shared_memory_bytes_are_refused(tmp_path):
    """Static SMem that is not a whole number of bytes is a damaged field, named with its line."""
    path = tmp_path / "frac.csv"
    path.write_text(_UNITS_HEADER + "s,s,,,,,,,,B,B,KB,GB/s,,,,\n"
                    '0.2,1.0e-05,4,1,1,128,1,1,8,12.5,0,,,"GeForce GTX 680 (0)","1","7","k(int*) [9]"\n')
    with pytest.raises(InputError, match="Static SMem is 12.5 at line 3: not a whole number"):
        read_nvprof_csv(path)


# -- concatenated runs ---------------------------------------------------------------------------------------

def _run_rows(start_s: float) -> str:
    """One run in the K40c file's layout: a 1 ms, 1 MB HtoD copy at ``start_s`` and a 0.1 ms kernel 0.5 ms after it
    ends (span 1.6 ms; 1 MiB / 1 ms = 0.976563 GiB/s, so the run shows binary units)."""
    return (f'{start_s:.6f},1.000000e-03,,,,,,,,,,1.000000,0.976563,"Tesla K40c (0)","1","7","[CUDA memcpy HtoD]"\n'
            f'{start_s + 0.0015:.6f},1.000000e-04,256,1,1,256,1,1,8,0,0,,,"Tesla K40c (0)","1","7","k(float*) [5]"\n')


@pytest.mark.parametrize(("second", "header"), [
    (3.0, True),  # the second run's clock reads later than the first run's end: a gap no one timed
    (1.0, True),  # it reads earlier: the runs overlap
    (1.0, False),  # runs pasted without the second header: the start times go back
])
def test_runs_are_joined_back_to_back(tmp_path, second, header):
    """Each run starts where the previous one ended, whatever its own clock read: the trace spans the sum of the
    runs' spans (2 x 1.6 ms), with nothing between them (a 1 s gap was counted when the second clock read later)."""
    path = tmp_path / "two-runs.csv"
    path.write_text(_HEADER + _run_rows(2.0) + (_HEADER if header else "") + _run_rows(second))
    trace = read_nvprof_csv(path)
    start, end = trace["start_ns"], trace["end_ns"]
    assert int(end.max() - start.min()) == 2 * 1_600_000
    assert start.tolist() == [2_000_000_000, 2_001_500_000, 2_001_600_000, 2_003_100_000]
    assert any(n.startswith("2 runs concatenated") for n in trace.meta.notes), trace.meta.notes


def test_one_run_is_never_split(tmp_path):
    """Rows of one run keep their times (starts that tie are not a new run)."""
    path = tmp_path / "one-run.csv"
    rows = _run_rows(2.0)
    path.write_text(_HEADER + rows + rows.splitlines(keepends=True)[1])  # the kernel twice, at the same start
    trace = read_nvprof_csv(path)
    assert trace["start_ns"].tolist() == [2_000_000_000, 2_001_500_000, 2_001_500_000]
    assert not any("runs concatenated" in n for n in trace.meta.notes)
