"""The machine-file template loads as is, and explains every key it lists."""

from __future__ import annotations

import re
import tomllib

from nodecast.machines import load_machine_file
from nodecast.machines.template import machine_template


def test_template_loads_and_composes_like_the_spec(sheet_folder, tmp_path):
    """The template is a valid machine file: the same node as the spec string, values from sheet and host."""
    from nodecast.machines import load_machine

    path = tmp_path / "node.toml"
    path.write_text(machine_template("h100-sxm5-80gb", "epyc-7742-2s", count=2))
    m = load_machine_file(path)
    spec = load_machine("h100-sxm5-80gbx2@epyc-7742-2s")
    assert (m.gpu, m.cpu, m.links) == (spec.gpu, spec.cpu, spec.links)
    assert m.gpu.sheet.key == "h100-sxm5-80gb" and m.cpu.host.key == "epyc-7742-2s"


def test_every_line_is_explained(sheet_folder):
    """Every key line, given or commented out, carries a comment; the units are said."""
    text = machine_template("h100-sxm5-80gb")
    keys = [ln for ln in text.splitlines() if re.match(r"^(# )?[a-z_0-9]+ = ", ln)]
    assert len(keys) > 30
    assert all(" # " in ln.split(" = ", 1)[1] for ln in keys)
    assert "bytes/s" in text and "Hz" in text and "FLOP/s" in text
    assert "nodecast's default" in text


def test_uncommented_values_load_and_override(sheet_folder, tmp_path):
    """Uncommenting a listed value gives a file that loads, with that value now the machine file's."""
    text = machine_template("h100-sxm5-80gb").replace("# sms = 132 ", "sms = 100 ")
    path = tmp_path / "node.toml"
    path.write_text(text)
    m = load_machine_file(path)
    assert m.gpu.sms == 100 and m.provenance["gpu.sms"].startswith("machine file (data sheet h100-sxm5-80gb")


def test_commented_values_are_the_sheets(sheet_folder):
    """The commented-out values read back as the sheet's own numbers."""
    gpu = machine_template("h100-sxm5-80gb").split("\n[gpu]\n")[1].split("\n[[links]]")[0]
    lines = [ln[2:].split("#")[0] for ln in gpu.splitlines() if ln.startswith(("# clock_hz", "# memory_bytes"))]
    assert tomllib.loads("\n".join(lines)) == {"clock_hz": 1.98e9, "memory_bytes": 80e9}
