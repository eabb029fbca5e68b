"""Nsight Compute CSV reader: both layouts, units, multi-file joins, bad input, Trace joins."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.traces.kinds import OpKind
from nodecast.traces.ncu import (
    NCU_COMMAND,
    NCU_METRICS,
    base_kernel_name,
    join_trace,
    parse_unit,
    read_ncu_csv,
    trace_from_metrics,
)
from nodecast.traces.trace import Trace

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
V100 = sorted(TRACES.glob("ncu-csv_v100_*.csv"))
needs_v100 = pytest.mark.skipif(len(V100) != 12, reason=f"the 12 ncu-csv_v100_* files are not in {TRACES}")


def _rows_of(path: Path) -> list[dict[str, str]]:
    """The CSV rows of a raw ncu stdout file, read with the csv module (independently of the reader)."""
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    return list(csv.DictReader(lines[start:]))


# -- real V100 set -------------------------------------------------------------------------
@needs_v100
def test_v100_set_loads_all_launches_and_kernels():
    """The 12 one-metric files join into one row per launch, as many launches and names as the files hold."""
    per_file = [_rows_of(p) for p in V100]
    launches = {len(r) for r in per_file}
    names = {len({row["Kernel Name"] for row in r}) for r in per_file}
    assert len(launches) == 1 and len(names) == 1  # every file profiles the same launches
    km = read_ncu_csv(V100)
    assert len(km) == launches.pop()  # 35 per SOURCES.md
    assert len(km.kernel_names) == names.pop()  # 5 per SOURCES.md
    assert km.precisions == ["fp32", "fp16"]  # FP64 counters were not collected


@needs_v100
def test_v100_values_match_the_files():
    """Bytes and the NERSC duration (cycles / cycles per second) equal the files' own values."""
    km = read_ncu_csv(V100)
    t = km.table
    by = {p.name.split("__", 1)[1][:-4]: {r["ID"]: r for r in _rows_of(p)} for p in V100}
    for launch_id in ("0", "1", "20", "34"):
        row = t[t["id"] == int(launch_id)].iloc[0]
        assert row["dram_bytes"] == float(by["dram__bytes.sum"][launch_id]["Metric Value"])
        assert row["l1_bytes"] == float(by["l1tex__t_bytes.sum"][launch_id]["Metric Value"])
        cycles = float(by["sm__cycles_elapsed.avg"][launch_id]["Metric Value"].replace(",", ""))
        rate = float(by["sm__cycles_elapsed.avg.per_second"][launch_id]["Metric Value"].replace(",", ""))
        assert row["duration_s"] == pytest.approx(cycles / rate, rel=1e-12)
        ffma = float(by["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"][launch_id]["Metric Value"])
        assert row["fp32_fma_inst"] == ffma


@needs_v100
def test_v100_notes_name_the_fallbacks():
    """Absent optional metrics (shared memory, warp usage, FP64) are each said in the notes."""
    notes = " ".join(read_ncu_csv(V100).notes)
    assert "sm__sass_data_bytes_mem_shared.sum" in notes
    assert "smsp__thread_inst_executed_per_inst_executed.ratio" in notes
    assert "FP64 FLOP taken as 0" in notes
    assert "sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second" in notes


@needs_v100
def test_v100_joins_to_a_trace_by_name_and_order():
    """Every launch joins to the Trace built from the metrics, and to a trace with other ops and short names."""
    km = read_ncu_csv(V100)
    tr = trace_from_metrics(km)
    assert np.array_equal(join_trace(km, tr), np.arange(len(km)))
    # A trace with a memcpy first and kernel names without parameter lists (as some profilers write them).
    short = [base_kernel_name(n) for n in km.table["kernel"]]
    names = list(dict.fromkeys(short))
    n = len(km)
    cols = {
        "kind": np.r_[OpKind.MEMCPY, np.full(n, OpKind.KERNEL)],
        "start_ns": np.arange(n + 1) * 1000,
        "end_ns": np.arange(n + 1) * 1000 + 500,
        "name_id": np.r_[-1, [names.index(s) for s in short]],
    }
    other = Trace.from_columns(cols, names)
    j = join_trace(km, other)
    assert j[0] == -1
    assert np.array_equal(j[1:], np.arange(n))


@needs_v100
def test_launches_missing_from_one_file_are_rejected(tmp_path):
    """Files that disagree on a kernel's number of launches give one error naming the kernel."""
    src = V100[0].read_text().splitlines()
    cut = tmp_path / "short.csv"
    cut.write_text("\n".join(src[:-1]) + "\n")  # drop the last launch
    with pytest.raises(InputError, match="launches in"):
        read_ncu_csv([V100[0], cut])


@needs_v100
def test_one_v100_file_lacks_required_metrics():
    """A single one-metric file is rejected with a message naming a missing required metric."""
    with pytest.raises(InputError, match=r"missing metric (gpu__time_duration\.sum|sm__cycles_elapsed)"):
        read_ncu_csv(V100[0])


# -- layouts and units (small CSVs written here to exercise the format rules) ------------------
WIDE_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
               '"Grid Size","Device","CC","gpu__time_duration.sum","dram__bytes.sum","lts__t_bytes.sum",'
               '"l1tex__t_bytes.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum",'
               '"sm__sass_thread_inst_executed_op_fadd_pred_on.sum","sm__sass_thread_inst_executed_op_fmul_pred_on.sum",'
               '"smsp__thread_inst_executed_per_inst_executed.ratio"')
WIDE_UNITS = '"","","","","","","","","","","","usecond","Mbyte","Kbyte","byte","inst","inst","inst",""'


def _wide(tmp_path: Path, rows: list[str], units: str = WIDE_UNITS) -> Path:
    p = tmp_path / "raw.csv"
    p.write_text("my program prints this\n==PROF== Connected to process 1\n==PROF== Disconnected\n"
                 + WIDE_HEADER + "\n" + units + "\n" + "\n".join(rows) + "\n")
    return p


def test_wide_layout_with_units_row_and_thousands_separators(tmp_path):
    """--page raw: the units row scales values to SI and "1,234.5" thousands separators are removed."""
    p = _wide(tmp_path, [
        '"0","1","app","h","k(float*)","1","7","(256, 1, 1)","(80, 1, 1)","0","7.0","1,234.5","2.5","3","4,096",'
        '"1,000","20","30","24.5"',
        '"1","1","app","h","k(float*)","1","7","(256, 1, 1)","(80, 1, 1)","0","7.0","10","1","1","1","0","0","0","32"',
    ])
    km = read_ncu_csv(p)
    t = km.table
    assert list(t["occurrence"]) == [0, 1]
    assert t["duration_s"].iloc[0] == pytest.approx(1234.5e-6)
    assert t["dram_bytes"].iloc[0] == pytest.approx(2.5e6)  # Mbyte: decimal mega
    assert t["l2_bytes"].iloc[0] == pytest.approx(3e3)  # Kbyte
    assert t["l1_bytes"].iloc[0] == 4096.0
    assert t["fp32_fma_inst"].iloc[0] == 1000.0
    assert t["threads_per_inst"].iloc[0] == 24.5
    assert km.precisions == ["fp32"]


def test_long_layout_newer_columns_and_autoscaled_units(tmp_path):
    """Long (details) layout with 2024 rule columns: one row per metric, per-row units (msecond, Gbyte)."""
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
            '"Rule Description","Estimated Speedup Type","Estimated Speedup"')
    metrics = [("gpu__time_duration.sum", "msecond", "1.5"), ("dram__bytes.sum", "Gbyte", "1.2"),
               ("lts__t_bytes.sum", "Gbyte", "1.5"), ("l1tex__t_bytes.sum", "Gbyte", "2"),
               ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum", "inst", "100,000"),
               ("sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "inst", "0"),
               ("sm__sass_thread_inst_executed_op_dmul_pred_on.sum", "inst", "n/a"),
               ("sm__sass_data_bytes_mem_shared.sum", "Mbyte", "64"),
               ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "", "1,000,000")]
    rows = [f'"0","9","a","h","void dk<1>(double*)","1","7","(128, 1, 1)","(10, 1, 1)","0","8.0","Command line '
            f'profiler metrics","{m}","{u}","{v}","","","","",""' for m, u, v in metrics]
    p = tmp_path / "long.csv"
    p.write_text(head + "\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match="no valid value"):  # dmul is n/a: a required count is missing
        read_ncu_csv(p)
    p.write_text(p.read_text().replace('"inst","n/a"', '"inst","5"'))
    t = read_ncu_csv(p).table
    assert t["duration_s"].iloc[0] == pytest.approx(1.5e-3)
    assert t["dram_bytes"].iloc[0] == pytest.approx(1.2e9)
    assert t["fp64_fma_inst"].iloc[0] == 100000.0
    assert t["shared_bytes"].iloc[0] == pytest.approx(64e6)
    assert t["shared_wavefronts"].iloc[0] == 1e6


def test_parse_unit_scales_to_si():
    """ncu unit strings map to SI factors: decimal K/M/G, binary Ki/Mi, time prefixes, rates."""
    assert parse_unit("usecond") == (1e-6, "second")
    assert parse_unit("msecond") == (1e-3, "second")
    assert parse_unit("nsecond") == (1e-9, "second")
    assert parse_unit("Mbyte") == (1e6, "byte")
    assert parse_unit("KiB") == (1024.0, "byte")
    assert parse_unit("cycle/nsecond") == (pytest.approx(1e9), "cycle/second")
    assert parse_unit("GHz") == (1e9, "hz")
    assert parse_unit("inst") == (1.0, "inst")
    assert parse_unit("%") == (1.0, "%")


def test_base_kernel_name_drops_void_and_parameters():
    """Template arguments stay, the return type and parameter list go."""
    assert base_kernel_name("void k<2, (int)3>(float*, int)") == "k<2, (int)3>"
    assert base_kernel_name("cleanup(float*, bool, int)") == "cleanup"
    assert base_kernel_name("plain") == "plain"


# -- bad input ---------------------------------------------------------------------------------
def test_missing_required_metric_is_named(tmp_path):
    """A wide CSV without l1tex__t_bytes.sum is rejected naming that metric."""
    header = WIDE_HEADER.replace(',"l1tex__t_bytes.sum"', "")
    units = WIDE_UNITS.replace(',"byte"', "", 1)
    p = tmp_path / "m.csv"
    p.write_text(header + "\n" + units + "\n"
                 + '"0","1","a","h","k","1","7","","","0","7.0","10","1","1","1","1","1","32"\n')
    with pytest.raises(InputError, match=r"l1tex__t_bytes\.sum"):
        read_ncu_csv(p)


def test_partial_flop_triple_is_rejected(tmp_path):
    """A precision with FMA counts but no ADD counts is an error naming the missing counter."""
    p = _wide(tmp_path, ['"0","1","a","h","k","1","7","","","0","7.0","10","1","1","1","1","1","1","32"'])
    text = p.read_text().replace("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "sm__other__x.sum")
    p.write_text(text)
    with pytest.raises(InputError, match=r"op_fadd_pred_on\.sum"):
        read_ncu_csv(p)


def test_zero_duration_is_rejected(tmp_path):
    """A launch with a zero duration cannot be projected: one error naming the launch."""
    p = _wide(tmp_path, ['"0","1","a","h","k","1","7","","","0","7.0","0","1","1","1","1","1","1","32"'])
    with pytest.raises(InputError, match=r"ID 0 .* durations must be > 0"):
        read_ncu_csv(p)


def test_wrong_duration_unit_is_rejected(tmp_path):
    """A duration column whose unit is not a time (another export) is rejected."""
    p = _wide(tmp_path, ['"0","1","a","h","k","1","7","","","0","7.0","10","1","1","1","1","1","1","32"'],
              units=WIDE_UNITS.replace('"usecond"', '"%"'))
    with pytest.raises(InputError, match="not a unit of this metric"):
        read_ncu_csv(p)


@needs_v100
@pytest.mark.parametrize(("metric", "good", "bad"), [("sm__cycles_elapsed.avg", "cycle", "furlong"),
                                                    ("sm__cycles_elapsed.avg.per_second", "cycle/second", "byte")])
def test_wrong_cycle_units_are_rejected(tmp_path, metric, good, bad):
    """The cycle count and its rate (which give the durations of the V100 set) must carry cycle units:
    'furlong' cycles were read as cycles."""
    files = []
    for src in V100:
        dst = tmp_path / src.name
        text = src.read_text()
        if src.name.endswith(f"__{metric}.csv"):
            text = text.replace(f'"{metric}","{good}"', f'"{metric}","{bad}"')
        dst.write_text(text)
        files.append(dst)
    with pytest.raises(InputError, match=rf"__{re.escape(metric)}\.csv: {re.escape(metric)}: unit '{bad}' is not a "
                                         "unit of this metric"):
        read_ncu_csv(files)


def test_details_page_sections_are_recognised(tmp_path):
    """--page details output (section metrics such as 'Duration') is rejected with a hint about it."""
    head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",' \
           '"Metric Name","Metric Unit","Metric Value"'
    rows = ['"0","1","a","h","k","1","7","GPU Speed Of Light Throughput","Duration","usecond","3.2"',
            '"0","1","a","h","k","1","7","GPU Speed Of Light Throughput","Memory Throughput","%","40"']
    p = tmp_path / "details.csv"
    p.write_text(head + "\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match="--page details"):
        read_ncu_csv(p)


def test_nvprof_metrics_csv_is_not_ncu(tmp_path):
    """An nvprof --metrics CSV has no ncu header: the error says what it looks like."""
    p = tmp_path / "nvprof.csv"
    p.write_text('==1== Profiling result:\n"Device","Kernel","Invocations","Metric Name","Metric Description",'
                 '"Min","Max","Avg"\n"Tesla V100","k","1","flop_count_sp","FLOPs","1","1","1"\n')
    with pytest.raises(InputError, match="nvprof"):
        read_ncu_csv(p)


def test_decimal_comma_is_rejected(tmp_path):
    """A decimal comma ("1,5") is refused with the LC_ALL=C hint instead of being read as 15."""
    p = _wide(tmp_path, ['"0","1","a","h","k","1","7","","","0","7.0","1,5","1","1","1","1","1","1","32"'])
    with pytest.raises(InputError, match="decimal comma"):
        read_ncu_csv(p)


def test_truncated_row_is_rejected(tmp_path):
    """A row with fewer fields than the header names its line."""
    p = _wide(tmp_path, ['"0","1","a","h","k","1","7"'])
    with pytest.raises(InputError, match="line 6"):
        read_ncu_csv(p)


def test_command_lists_every_metric():
    """The printed ncu command collects every metric the reader knows, as a raw-page CSV in base units."""
    for m in NCU_METRICS:
        assert m in NCU_COMMAND
    assert "--page raw" in NCU_COMMAND and "--print-units base" in NCU_COMMAND and "--csv" in NCU_COMMAND


# -- a bad value in one file of the one-metric-per-file V100 set names that file and metric -------------
def _v100_with_bad_value(tmp_path: Path, metric: str, value: str) -> tuple[list[Path], Path]:
    """Copies of the 12 V100 files where ``metric``'s file has ``value`` for launch ID 0 (its first launch)."""
    out = []
    bad = None
    for src in V100:
        dst = tmp_path / src.name
        text = src.read_text(encoding="utf-8")
        if src.name.endswith(f"__{metric}.csv"):
            lines = text.splitlines(keepends=True)
            i = next(k for k, line in enumerate(lines) if line.startswith('"0",'))
            cells = next(csv.reader([lines[i]]))
            assert cells[-2] != "" and cells[-3] == metric  # long layout: ..., Metric Name, Metric Unit, Metric Value
            cells[-1] = value
            lines[i] = ",".join(f'"{c}"' for c in cells) + "\n"
            text = "".join(lines)
            bad = dst
        dst.write_text(text, encoding="utf-8")
        out.append(dst)
    assert bad is not None
    return out, bad


@needs_v100
@pytest.mark.parametrize(("metric", "value", "shown"), [
    ("sm__cycles_elapsed.avg", "abc", "has no number"),
    ("sm__cycles_elapsed.avg", "1e400", "has value inf"),
    ("sm__cycles_elapsed.avg", "-5", "has value -5"),
    ("sm__cycles_elapsed.avg.per_second", "0", "has value 0"),
    ("sm__cycles_elapsed.avg.per_second", "nan", "has no number"),
    ("dram__bytes.sum", "-5", "has value -5"),
    ("dram__bytes.sum", "1e400", "has value inf"),
])
def test_bad_value_names_its_file_and_metric(tmp_path, metric, value, shown):
    """The message names the file holding the bad value (not the first of the set) and prints it plainly."""
    files, bad = _v100_with_bad_value(tmp_path, metric, value)
    with pytest.raises(InputError) as info:
        read_ncu_csv(files)
    msg = info.value.message
    assert msg.startswith(f"{bad}: {metric}: ") and "more files" not in msg
    assert shown in msg and "ID 0" in msg and "np.float64" not in msg
