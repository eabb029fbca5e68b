"""Find the Machine a name stands for: a catalogue node, a machine file, a spec string or a name as people type it.

``--from``/``--to`` and ``nodecast machines show`` take any of them. ``load_machine`` reads a path as a machine
file, then tries a catalogue name (which wins over a sheet key), a spec string ``GPU[xN][@HOST]`` and a typed name
(``nodecast.machines.typed_names``); for a name none of them places it lists the close ones it knows.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from nodecast.errors import InputError
from nodecast.machines.compose import compose_machine, parse_spec
from nodecast.machines.hosts import host_keys
from nodecast.machines.loader import catalogue_dir, catalogue_names, load_machine_file
from nodecast.machines.schema import Machine
from nodecast.machines.sheets import loadable_sheets, sheet_keys
from nodecast.machines.typed_names import resolve_typed_name
from nodecast.paths import names_a_file


def load_machine(name_or_path: str | Path) -> Machine:
    """A catalogue machine by name, a machine file by path, or a node composed from a spec string.

    Spec strings read ``GPU[xN][@HOST]`` (``rtx-3090``, ``a100-sxm4-80gbx8@epyc-7742-2s``): see
    ``nodecast.machines.compose``. A catalogue machine name wins over a sheet key.
    """
    text = str(name_or_path)
    if text.endswith(".toml") or "/" in text or names_a_file(text):
        return load_machine_file(text)
    candidate = catalogue_dir() / f"{text}.toml"
    if names_a_file(candidate):  # a name too long for a file is no catalogue machine
        return load_machine_file(candidate)
    spec = parse_spec(text)
    if spec is not None:
        return compose_machine(spec)
    names = catalogue_names()
    canonical = resolve_typed_name(text, names, loadable_sheets()[0], host_keys())
    if canonical is not None and canonical != text:
        return load_machine(canonical)
    keys = sheet_keys()
    close = difflib.get_close_matches(text.lower(), names + keys, n=3)
    hint = (f"Did you mean {', '.join(close)}?" if close
            else f"Known nodes: {', '.join(names)}; GPUs: {', '.join(keys)}") + \
        "; or compose a node from a GPU data sheet: GPU[xN][@HOST], e.g. h100-sxm5-80gbx8 (nodecast machines list)"
    raise InputError(f"unknown machine {text!r}", key="machine", hint=hint)
