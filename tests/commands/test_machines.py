"""``nodecast machines list|show|diff`` through ``nodecast.cli.main``."""

from __future__ import annotations

import json

import pytest

from nodecast import cli
from nodecast.machines import catalogue_names


@pytest.fixture(autouse=True)
def only_machines_command(monkeypatch):
    """Build the parser with the machines subcommand only, so these tests do not depend on the others."""
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("machines",))


def run(argv: list[str]) -> int:
    """cli.main's exit code, including argparse's SystemExit on usage errors."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def assert_user_error(capsys, argv: list[str], *fragments: str) -> str:
    """Exit code 2, one stderr line, no traceback, containing every fragment."""
    code = run(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err
    return err


def test_list_table(capsys):
    """The list table has every catalogue machine and says GB means 1e9 B."""
    assert run(["machines", "list"]) == 0
    out = capsys.readouterr().out
    for name in catalogue_names():
        assert name in out
    assert "1 GB = 1e9 B" in out
    assert "NVLink-C2C" in out and "PCIe gen2 x16" in out
    assert "GPU data sheets" in out and "Hosts" in out and "xeon-platinum-8480c-2s" in out


def test_list_json(capsys):
    """list --json prints one object per machine, GPU sheet and host, with numbers as numbers."""
    from nodecast.machines.hosts import host_keys

    assert run(["machines", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {h["key"] for h in data["hosts"]} == set(host_keys())
    assert all(isinstance(g["dram_bandwidth_bps"], float) for g in data["gpus"])
    by = {r["name"]: r for r in data["machines"]}
    assert set(by) == set(catalogue_names())
    assert by["titan"]["host_link_raw_bps"] == pytest.approx(8e9)
    assert isinstance(by["summit"]["dram_bandwidth_bps"], float)
    assert by["summit"]["gpu_count"] == 6


def test_show_table(capsys):
    """show prints the groups, link rates, host routes with bottlenecks and units."""
    assert run(["machines", "show", "commscope-4029gp-tvrt"]) == 0
    out = capsys.readouterr().out
    for text in ("CPU", "GPU compute peaks", "Links", "Host routes", "Peer routes", "1 GB = 1e9 B",
                 "pcie-cpu0-sw0 (PCIe gen3 x16)", "15.75", "7.88", "Intel Xeon Gold 6148", "Measured values: none"):
        assert text in out


def test_show_table_says_each_switchs_kind_generation_and_sharp(capsys):
    """A node with [switch.NAME] tables prints one line per switch (kind, generation, NVLink SHARP); a node whose
    switches have no table prints only their names, as before."""
    assert run(["machines", "show", "dgx-b200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "switch nvswitch: NVSwitch gen 4; NVLink SHARP (NVLS, in-switch reductions): yes" in lines
    assert "switch pcie-sw0: PCIe switch, gen not given; NVLink SHARP (NVLS, in-switch reductions): no" in lines
    assert run(["machines", "show", "dgx-a100"]) == 0
    assert ("switch nvswitch: NVSwitch gen 2; NVLink SHARP (NVLS, in-switch reductions): no"
            in capsys.readouterr().out.splitlines())
    assert run(["machines", "show", "commscope-4029gp-tvrt"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("switches: ") for line in lines)
    assert not any(line.startswith("switch ") for line in lines)


def test_show_json(capsys):
    """show --json prints the full summary with SI numbers."""
    assert run(["machines", "show", "summit", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["name"] == "summit"
    assert s["gpu"]["levels"]["dram"]["bandwidth_bps"] == 900e9
    assert s["host_routes"][0]["bottleneck"] == "nvlink-cpu0-gpu0"
    assert len(s["links"]) == 13


def test_show_by_path(capsys):
    """show accepts a path to a machine file."""
    from nodecast.machines.loader import catalogue_dir

    assert run(["machines", "show", str(catalogue_dir() / "gh200.toml")]) == 0
    assert "NVLink-C2C" in capsys.readouterr().out


def test_diff_table(capsys):
    """diff prints both machines, units and the B/A ratio."""
    assert run(["machines", "diff", "titan", "summit"]) == 0
    out = capsys.readouterr().out
    assert "titan (A) vs summit (B)" in out and "1 GB = 1e9 B" in out
    assert "GPU DRAM bandwidth per GPU" in out and "3.60×" in out
    assert "6.25×" in out  # host link 50 / 8 GB/s


def test_diff_json(capsys):
    """diff --json prints rows with numeric a, b and ratio."""
    assert run(["machines", "diff", "dgx-a100", "h100-sxm5-server", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["a"], data["b"]) == ("dgx-a100", "h100-sxm5-server")
    by = {r["key"]: r for r in data["rows"]}
    assert by["host_bw_per_gpu"]["ratio"] == pytest.approx(2.0)
    assert isinstance(by["dram_bw_per_gpu"]["a"], float)
    assert by["gpu_model"]["ratio"] is None


def test_show_unknown_machine(capsys):
    """An unknown name exits 2 with one line suggesting close names."""
    assert_user_error(capsys, ["machines", "show", "sumit"], "unknown machine 'sumit'", "Did you mean summit")


def test_show_missing_file(capsys, tmp_path):
    """A missing file exits 2 with one line naming it."""
    path = tmp_path / "absent.toml"
    assert_user_error(capsys, ["machines", "show", str(path)], str(path), "no such file")


def test_diff_bad_toml(capsys, tmp_path):
    """A machine file that is not TOML exits 2 with one line naming the file."""
    path = tmp_path / "broken.toml"
    path.write_text("name = = 1\n")
    assert_user_error(capsys, ["machines", "diff", "titan", str(path)], str(path), "not valid TOML")


def test_show_bad_value(capsys, tmp_path):
    """A negative bandwidth in a machine file exits 2 naming the file and the key."""
    from nodecast.machines.loader import catalogue_dir

    text = (catalogue_dir() / "titan.toml").read_text().replace("bandwidth_bps = 250e9", "bandwidth_bps = -250e9")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert_user_error(capsys, ["machines", "show", str(path)], str(path), "gpu.levels.dram.bandwidth_bps",
                      "must be a positive number")


def test_machines_without_subcommand(capsys):
    """`nodecast machines` alone is a usage error: exit 2, one line."""
    assert_user_error(capsys, ["machines"], "machines")


def test_diff_needs_two_machines(capsys):
    """diff with one machine is a usage error: exit 2, one line."""
    assert_user_error(capsys, ["machines", "diff", "titan"], "B")


def test_show_composed_node_with_sheet_and_limits(capsys, monkeypatch, tmp_path):
    """show of a spec string prints each value's source, the sheet with its sources, the per-SM limits and notes."""
    from nodecast.machines import sheets

    folder = _example_catalogue(tmp_path)
    monkeypatch.setattr(sheets, "gpus_dir", lambda: folder)
    assert run(["machines", "show", "h100-sxm5-80gbx2@epyc-7742-2s"]) == 0
    out = capsys.readouterr().out
    for text in ("data sheet h100-sxm5-80gb", "host epyc-7742-2s", "GPU data sheet h100-sxm5-80gb",
                 "fp16_tensor", "989.4 TFLOP/s", "Per-SM limits of sm_90", "max_warps_per_sm", "64 warps",
                 "[derived: the README example]", "note: h100-sxm5-80gb's PCIe gen5 x16 runs at gen4"):
        assert text in out, text


def test_show_json_has_provenance(capsys):
    """show --json carries provenance, notes, sheet and host."""
    assert run(["machines", "show", "titan", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["provenance"]["cpu.model"] == "machine file"
    assert {"notes", "sheet", "host"} <= set(s)


def test_template_writes_a_loadable_file(capsys, monkeypatch, tmp_path):
    """template -o writes a machine file that loads; without -o it prints it."""
    from nodecast.machines import load_machine_file, sheets

    folder = _example_catalogue(tmp_path)
    monkeypatch.setattr(sheets, "gpus_dir", lambda: folder)
    out = tmp_path / "node.toml"
    assert run(["machines", "template", "--gpu", "h100-sxm5-80gb", "--host", "epyc-7742-2s", "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    assert load_machine_file(out).gpu.sheet.key == "h100-sxm5-80gb"
    assert run(["machines", "template", "--gpu", "h100-sxm5-80gb"]) == 0
    assert capsys.readouterr().out.startswith("# nodecast machine file")


@pytest.mark.parametrize(("argv", "fragments"), [
    (["--gpu", "nosuch"], ("unknown GPU data sheet 'nosuch'",)),
    (["--host", "nosuch"], ("unknown host 'nosuch'",)),
    (["--count", "0"], ("--count", "must be 1 to 72")),
    (["-o", "node.txt"], ("a machine file ends in .toml",)),
])
def test_template_bad_options(capsys, monkeypatch, tmp_path, argv, fragments):
    """Bad template options exit 2 with one line."""
    from nodecast.machines import sheets

    folder = _example_catalogue(tmp_path)
    monkeypatch.setattr(sheets, "gpus_dir", lambda: folder)
    args = ["--gpu", "h100-sxm5-80gb", *argv] if "--gpu" not in argv else argv
    assert_user_error(capsys, ["machines", "template", *args], *fragments)


def _example_catalogue(tmp_path):
    """A sheet folder with an H100 SXM5 sheet and the sm_90 target, in the documented format (gpus/README.md)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "src" / "nodecast" / "machines" / "gpus" / "README.md").read_text()
    sheet, target = re.findall(r"```toml\n(.*?)```", readme, re.S)[:2]
    folder = tmp_path / "gpus"
    (folder / "targets").mkdir(parents=True)
    (folder / "h100-sxm5-80gb.toml").write_text(sheet.replace("fp32 = 66.9e12", "fp32 = 66.9e12  # [derived: the README example]"))
    (folder / "targets" / "sm_90.toml").write_text(target)
    return folder
