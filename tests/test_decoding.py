"""Tests for nodecast.decoding: JSON and TOML beyond the decoders' limits (an integer of more than 4,300
digits, arrays nested 100,000 deep) are one-line errors naming the file, not ValueError/RecursionError
tracebacks, in every reader: machine files, GPU data sheets, hosts, Kineto traces, DAG files, Parquet metadata."""

from __future__ import annotations

import gzip
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from nodecast.cli import main

BIG = "1" + "0" * 5000
DEEP = "[" * 100_000 + "]" * 100_000
_MACHINES = Path(str(resources.files("nodecast.machines")))


def _toml(name: str) -> str:
    return (_MACHINES / name).read_text(encoding="utf-8")


def _machine_with(tmp_path: Path, *, sheet: str | None = None, host: str | None = None) -> Path:
    """A copy of the catalogue's h100-pcie-server.toml, its sheet and host replaced by the given TOML texts."""
    text = _toml("catalogue/h100-pcie-server.toml")
    if sheet is not None:
        (tmp_path / "targets").mkdir(exist_ok=True)
        (tmp_path / "sheet.toml").write_text(sheet, encoding="utf-8")
        text = text.replace('sheet = "h100-pcie-80gb"', f'sheet = "{tmp_path / "sheet.toml"}"', 1)
    if host is not None:
        (tmp_path / "host.toml").write_text(host, encoding="utf-8")
        text = text.replace('host = "epyc-milan-64c-2s"', f'host = "{tmp_path / "host.toml"}"', 1)
    path = tmp_path / "machine.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _big_int(text: str) -> str:
    """``text`` with its ``schema_version = 1`` made a 5,001-digit integer."""
    out, n = re.subn(r"(?m)^schema_version = 1\b", f"schema_version = {BIG}", text, count=1)
    assert n == 1
    return out


def _deep(text: str) -> str:
    """``text`` with a key holding arrays nested 100,000 deep, before its first table."""
    return text.replace("\n[", f"\nzz_deep = {DEEP}\n[", 1)


def _cases(tmp_path: Path) -> dict[str, list[str]]:
    machine = _toml("catalogue/h100-pcie-server.toml")
    sheet = _toml("gpus/h100-pcie-80gb.toml")
    host = _toml("hosts/epyc-milan-64c-2s.toml")
    files = {
        "machine-int": ("m.toml", _big_int(machine)),
        "machine-deep": ("m.toml", _deep(machine)),
    }
    out = {}
    for case, (name, text) in files.items():
        (tmp_path / case).mkdir()
        (tmp_path / case / name).write_text(text, encoding="utf-8")
        out[case] = ["machines", "show", str(tmp_path / case / name)]
    for case, kw in {"sheet-int": {"sheet": _big_int(sheet)}, "sheet-deep": {"sheet": _deep(sheet)},
                     "host-int": {"host": _big_int(host)}, "host-deep": {"host": _deep(host)}}.items():
        (tmp_path / case).mkdir()
        out[case] = ["machines", "show", str(_machine_with(tmp_path / case, **kw))]
    return out


@pytest.mark.parametrize("case", ["machine-int", "machine-deep", "sheet-int", "sheet-deep", "host-int", "host-deep"])
def test_toml_beyond_the_decoders_limits_is_one_line(tmp_path, capsys, case):
    """Machine files, sheets and hosts with a 5,001-digit integer or arrays nested 100,000 deep: exit 2, one
    line naming the file (was ValueError: Exceeds the limit (4300 digits) / RecursionError)."""
    argv = _cases(tmp_path)[case]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("nodecast: error: ") and err.count("\n") == 1
    assert ("4,300 digits" if case.endswith("int") else "nested too deeply") in err
    assert ("sheet.toml" if case.startswith("sheet") else "host.toml" if case.startswith("host") else "m.toml") in err


def test_kineto_trace_with_a_huge_integer_is_one_line(shared_traces, tmp_path, capsys):
    """A real Kineto trace whose first ``ts`` is a 5,001-digit integer: exit 2, one line (was a ValueError)."""
    raw = gzip.decompress((shared_traces / "kineto_alexnet-benchmark_a100.json.gz").read_bytes()).decode()
    text, n = re.subn(r'"ts": *[0-9.]+', f'"ts": {BIG}', raw, count=1)
    assert n == 1
    path = tmp_path / "t.json"
    path.write_text(text, encoding="utf-8")
    assert main(["inspect", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "4,300 digits" in err and "t.json" in err


@pytest.mark.parametrize("bad", ["int", "deep"])
def test_dag_file_beyond_the_decoders_limits_is_one_line(tmp_path, capsys, bad):
    """simulate --dag on a real DAG file (a Cholesky written by to_json) with a 5,001-digit priority, or
    nested 100,000 deep: exit 2, one line naming the file."""
    from nodecast.graph.apps import cholesky
    from nodecast.graph.taskgraph import to_json

    text = json.dumps(to_json(cholesky(960 * 2)))
    if bad == "int":
        text, n = re.subn(r'"priority": *\d+', f'"priority": {BIG}', text, count=1)
    else:
        text, n = re.subn(r'"access": ', f'"deep": {DEEP}, "access": ', text, count=1)
    assert n == 1
    path = tmp_path / "g.json"
    path.write_text(text, encoding="utf-8")
    assert main(["simulate", "--dag", str(path), "--machine", "dgx-a100"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "g.json" in err
    assert ("4,300 digits" if bad == "int" else "nested too deeply") in err


def test_parquet_metadata_nested_too_deeply_is_one_line(tmp_path, capsys):
    """A Parquet file whose nodecast metadata is JSON nested 100,000 deep: exit 2, one line (was a
    RecursionError; the metadata's other errors were already caught)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nodecast.traces.parquet import METADATA_KEY

    assert main(["convert", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x", "-o",
                 str(tmp_path / "a.parquet")]) == 0
    capsys.readouterr()
    table = pq.read_table(tmp_path / "a.parquet")
    meta = dict(table.schema.metadata)
    meta[METADATA_KEY.encode() if isinstance(METADATA_KEY, str) else METADATA_KEY] = DEEP.encode()
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "b.parquet")
    assert main(["inspect", str(tmp_path / "b.parquet")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "b.parquet" in err
    assert pa is not None


#: An integer under the digit limit but far beyond a double's range (float() of it is an OverflowError).
HUGE = "1" + "0" * 4000


def test_machine_value_beyond_a_double_is_one_line(tmp_path, capsys):
    """A machine file whose memory_bytes is a 4,001-digit integer (under the decoder's limit): exit 2, one line
    naming the key (was OverflowError: int too large to convert to float)."""
    text, n = re.subn(r"(?m)^memory_bytes = \d+", f"memory_bytes = {HUGE}", _toml("catalogue/h100-pcie-server.toml"),
                      count=1)
    assert n == 1
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["machines", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "cpu.memory_bytes" in err


@pytest.mark.parametrize("key", ["priority", "flops"])
def test_dag_value_beyond_its_column_is_one_line(tmp_path, capsys, key):
    """A DAG task whose priority or flops is a 4,001-digit integer: exit 2, one line naming the key (was
    OverflowError from the int32 priority column or float())."""
    from nodecast.graph.apps import cholesky
    from nodecast.graph.taskgraph import to_json

    doc = to_json(cholesky(960 * 2))
    doc["tasks"][0][key] = 0
    text = json.dumps(doc).replace(f'"{key}": 0', f'"{key}": {HUGE}', 1)
    path = tmp_path / "g.json"
    path.write_text(text, encoding="utf-8")
    assert main(["simulate", "--dag", str(path), "--machine", "dgx-a100"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"tasks[0].{key}" in err
