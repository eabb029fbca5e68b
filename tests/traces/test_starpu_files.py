"""Readers of StarPU's calibration files (platform XML, bus matrices, performance models)."""

from __future__ import annotations

import math
import re

import pytest

from nodecast.errors import InputError
from nodecast.traces.starpu_files import read_bus_config, read_bus_matrix, read_perfmodel, read_platform_xml

pytestmark = pytest.mark.shared  # needs ../shared/data/starpu


def test_attila_platform_v4_has_hosts_links_and_routes(starpu_data):
    """attila's v4 platform declares RAM, three CUDA hosts with memsize/memcpy_peer, per-direction links and routes."""
    px = read_platform_xml(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")
    assert px.version == "4"
    assert px.hosts["CUDA0"].props["memsize"] == "3220897792"
    assert px.hosts["CUDA1"].props["memcpy_peer"] == "1"
    assert px.links["RAM-CUDA0"].bandwidth_bps == pytest.approx(6008661719.001335)
    assert px.links["RAM-CUDA0"].latency_s == pytest.approx(9e-6)
    assert px.routes[("CUDA0", "CUDA2")].count("Host") == 2
    assert px.config["network/crosstraffic"] == "0"


def test_v3_and_v4_dialects_agree(starpu_data):
    """The version-3 file (plain numbers, power=) reads the same links and routes as the version-4 one."""
    bus = starpu_data / "sampling" / "bus"
    v3 = read_platform_xml(bus / "attila.platform.xml")
    v4 = read_platform_xml(bus / "attila.platform.v4.xml")
    assert v3.routes == v4.routes
    for name, link in v4.links.items():
        assert v3.links[name].bandwidth_bps == pytest.approx(link.bandwidth_bps)
        assert v3.links[name].latency_s == pytest.approx(link.latency_s)


def test_bus_matrices_drop_missing_nodes(starpu_data):
    """The .bandwidth matrix keeps the 7 real memory nodes (RAM, 3 CUDA, 3 OpenCL) in MB/s."""
    bw = read_bus_matrix(starpu_data / "sampling" / "bus" / "attila.bandwidth")
    assert len(bw) == 7 and all(len(row) == 7 for row in bw)
    assert bw[0][1] == pytest.approx(6008.942513)
    cfg = read_bus_config(starpu_data / "sampling" / "bus" / "attila.config")
    assert cfg == {"cpus": 12, "cuda": 3, "opencl": 3, "mic": 0}


def test_perfmodel_entries_are_in_seconds(starpu_data):
    """chol_model_gemm.attila gives a CUDA0 mean of 2795.67 µs for 11059200 bytes."""
    pm = read_perfmodel(starpu_data / "sampling" / "codelets" / "45" / "chol_model_gemm.attila")
    assert pm.symbol == "chol_model_gemm" and pm.machine == "attila"
    cuda0 = next(a for a in pm.archs if a.kind == "cuda" and a.devid == 0)
    entry = next(e for e in cuda0.entries if e.size_bytes == 11059200)
    assert entry.mean_s == pytest.approx(2795.670e-6)
    assert entry.footprint == 0x24C84A50
    assert math.isnan(cuda0.regression.alpha)


def test_every_shipped_model_parses_or_is_a_broken_link(starpu_data):
    """All model files parse; only link stubs to missing files raise InputError."""
    folder = starpu_data / "sampling" / "codelets" / "45"
    broken = 0
    for path in sorted(folder.iterdir()):
        try:
            read_perfmodel(path)
        except InputError as exc:
            assert "link stub" in exc.reason
            broken += 1
    assert broken < 30


def test_link_stub_is_followed(starpu_data):
    """A one-line file naming a sibling model (a git symlink) reads as that model."""
    folder = starpu_data / "sampling" / "codelets" / "45"
    a = read_perfmodel(folder / "chol_model_gemm.hannibal-pitch")
    b = read_perfmodel(folder / "chol_model_gemm.hannibal")
    assert [x.entries for x in a.archs] == [x.entries for x in b.archs] and a.archs


def test_swapped_nonlinear_line_is_accepted(tmp_path):
    """A model whose multiple-regression flag precedes the non-linear line (concurrent write) still parses."""
    text = """##
45
# combs
1
1
1
0
1
1
1
0 0 0 0 nan nan 0 0 0
0
nan nan nan
abcd 100 0 1.0e+01 1.0e+00 0 0 3
"""
    path = tmp_path / "k.m"
    path.write_text(text)
    pm = read_perfmodel(path)
    assert pm.archs[0].entries[0].mean_s == pytest.approx(1e-5)


def test_malformed_xml_is_an_input_error(tmp_path):
    """A truncated platform file is one clear InputError naming the file."""
    path = tmp_path / "bad.platform.xml"
    path.write_text("<platform version='4'><host id='RAM'")
    with pytest.raises(InputError, match="not well-formed"):
        read_platform_xml(path)


def test_entity_declarations_are_refused(tmp_path):
    """XML that declares entities is refused (no entity expansion)."""
    path = tmp_path / "evil.platform.xml"
    path.write_text('<?xml version="1.0"?><!DOCTYPE p [<!ENTITY x "y">]><platform/>')
    with pytest.raises(InputError, match="entity"):
        read_platform_xml(path)


def test_route_to_unknown_link_is_an_input_error(tmp_path):
    """A route naming an undeclared link is reported with the route."""
    path = tmp_path / "x.platform.xml"
    path.write_text(
        '<platform version="4"><AS id="a" routing="Full"><host id="RAM" speed="1f"/><host id="CUDA0" speed="1f"/>'
        '<route src="RAM" dst="CUDA0"><link_ctn id="nope"/></route></AS></platform>'
    )
    with pytest.raises(InputError, match="unknown link 'nope'"):
        read_platform_xml(path)


@pytest.mark.shared
@pytest.mark.parametrize("mean", ["inf", "nan", "-2.8e+03", "0.0", "1e300"])
def test_history_entry_with_impossible_mean_is_named_with_its_line(starpu_data, tmp_path, mean):
    """A model entry whose mean is not a plausible duration is a damaged file: error with file and line."""
    src = starpu_data / "sampling" / "codelets" / "45" / "chol_model_gemm.attila"
    lines = src.read_text().splitlines()
    target = next(i for i, line in enumerate(lines) if re.match(r"[0-9a-f]{8}\s", line))  # footprint: a history entry
    fields = lines[target].split()
    fields[3] = mean
    lines[target] = "\t".join(fields)
    damaged = tmp_path / "chol_model_gemm.attila"
    damaged.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"line {target + 1}: history entry with mean {re.escape(mean)} µs") as info:
        read_perfmodel(damaged)
    assert str(damaged) in info.value.message


def test_unknown_device_type_is_named_with_its_line(starpu_data, tmp_path):
    """A device type StarPU does not define (a damaged file) is refused, not read as a new architecture."""
    src = starpu_data / "sampling" / "codelets" / "45" / "chol_model_gemm.attila"
    text = src.read_text()
    numbered = text.splitlines()
    # the first "# device type" comment is followed by the CUDA type number (1)
    i = next(k for k, line in enumerate(numbered) if line.strip().lower().startswith("# device type"))
    j = next(k for k in range(i + 1, len(numbered)) if numbered[k].strip() and not numbered[k].startswith("#"))
    numbered[j] = "7"
    damaged = tmp_path / "chol_model_gemm.attila"
    damaged.write_text("\n".join(numbered) + "\n")
    with pytest.raises(InputError, match=rf"line {j + 1}: unknown device type 7"):
        read_perfmodel(damaged)


def _damaged_gemm(starpu_data, tmp_path, after_comment: str, field: int, value: str) -> tuple:
    """A copy of the real chol_model_gemm.attila with field ``field`` (0-based) of the first data line after
    the first comment starting with ``after_comment`` set to ``value``; returns (path, 1-based line number)."""
    src = starpu_data / "sampling" / "codelets" / "45" / "chol_model_gemm.attila"
    lines = src.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(after_comment))
    j = next(k for k in range(i + 1, len(lines)) if lines[k].strip() and not lines[k].startswith("#"))
    fields = lines[j].split()
    fields[field] = value
    lines[j] = "\t".join(fields)
    damaged = tmp_path / "chol_model_gemm.attila"
    damaged.write_text("\n".join(lines) + "\n")
    return damaged, j + 1


@pytest.mark.shared
@pytest.mark.parametrize(("value", "reason"), [
    ("nan", r"'nan' is not a number \(NaN\)"),
    ("inf", "'inf' is infinite"),
    ("1e400", "'1e400' is infinite"),
    ("-3", r"'-3' is out of range \(must be >= 0\)"),
    ("2.5", "'2.5' is not a whole number"),
])
def test_regression_sample_count_must_be_a_count(starpu_data, tmp_path, value, reason):
    """A nan/inf/1e400 sample count n in the regression line is one line naming file, field and line (nan raised
    ValueError and inf OverflowError outside the reader's try, a traceback)."""
    path, line = _damaged_gemm(starpu_data, tmp_path, "# sumlnx", 6, value)
    with pytest.raises(InputError, match=rf"^{path}: the regression line \(field 7, n\), line {line}: {reason}"):
        read_perfmodel(path)


@pytest.mark.shared
def test_regression_coefficients_keep_starpus_nan(starpu_data, tmp_path):
    """nan and inf stay accepted as regression coefficients: StarPU writes nan for a fit it could not make."""
    path, _ = _damaged_gemm(starpu_data, tmp_path, "# sumlnx", 4, "inf")
    model = read_perfmodel(path)
    assert math.isinf(model.archs[0].regression.alpha) and not model.archs[0].regression.linear_valid()


@pytest.mark.shared
@pytest.mark.parametrize(("field", "value", "reason"), [
    (1, "inf", r"history entry field 2 \(size\), line {line}: 'inf' is infinite"),
    (1, "nan", r"history entry field 2 \(size\), line {line}: 'nan' is not a number \(NaN\)"),
    (1, "-5", r"history entry field 2 \(size\), line {line}: '-5' is out of range \(must be >= 0 and <= "
              r"1,125,899,906,842,624\)"),
    (7, "inf", r"history entry field 8 \(n\), line {line}: 'inf' is infinite"),
    (7, "1e400", r"history entry field 8 \(n\), line {line}: '1e400' is infinite"),
    (2, "nan", r"history entry field 3 \(flops\), line {line}: 'nan' is not a number \(NaN\)"),
    (0, "xyz", r"history entry field 1 \(hash\), line {line}: 'xyz' is not a base-16 integer"),
])
def test_history_entry_fields_are_checked(starpu_data, tmp_path, field, value, reason):
    """An inf size or count (OverflowError traceback before), a NaN or negative size, NaN flops or a bad hash in a
    history entry is one line naming file, field and line."""
    path, line = _damaged_gemm(starpu_data, tmp_path, "# hash", field, value)
    with pytest.raises(InputError, match=rf"^{path}: {reason.format(line=line)}"):
        read_perfmodel(path)


@pytest.mark.shared
def test_bus_matrix_entries_that_are_not_numbers_name_line_and_column(starpu_data, tmp_path):
    """A word in a .bandwidth matrix names its line and column (0-based, StarPU's 'to k' header)."""
    src = starpu_data / "sampling" / "bus" / "attila.bandwidth"
    lines = src.read_text().splitlines()
    lines[2] = lines[2].replace("0.000000", "fast", 1)
    path = tmp_path / "attila.bandwidth"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"^{path}: column 1, line 3: 'fast' is not a number"):
        read_bus_matrix(path)
