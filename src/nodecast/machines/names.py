"""Find a GPU data sheet from a device name as profilers write it.

Profilers copy the driver's device name into traces (``cudaDeviceProp.name``,
rocminfo's marketing name): ``NVIDIA GeForce RTX 3090``, ``Tesla V100-SXM2-16GB``,
``AMD Instinct MI300X VF``. A sheet lists those names in ``device_names``.
Matching is deterministic and never guesses between sheets:

1. exact: the name is one of a sheet's ``device_names``;
2. normalised: the names agree after ``normalise_gpu_name`` (``nodecast.machines.device_names``: case,
   punctuation and spaces ignored; leading ``NVIDIA``, ``GeForce``, ``Tesla``
   and ``AMD`` dropped; a trailing ``VF`` dropped: an SR-IOV virtual function
   of the same GPU, as cloud VMs report MI300X). The name is compared with every
   device name, the product name and the key of every sheet.

A name that matches two sheets at the same step is an error listing them; a
name that matches none returns None (``match_sheet``) or raises
(``find_sheet``). No edit-distance or prefix matching: ``A100`` alone matches
no sheet, since both 40 GB and 80 GB A100s exist.

Generic names match nothing (``is_generic_gpu_name``): NVIDIA drivers name a
board they do not know (pre-release, unlisted) "Graphics Device", and readers
write "device N" where a trace records no name. Such a name says nothing of
the product, so it is told apart by the properties the trace records
(``nodecast.machines.properties``), and no sheet may list it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodecast.errors import InputError
from nodecast.machines import sheets as catalogue_sheets  # read at call time: tests give the catalogue another folder
from nodecast.machines.device_names import is_generic_gpu_name, normalise_gpu_name  # the name rules, re-exported
from nodecast.machines.parts import GpuSheet
from nodecast.machines.schema import Machine
from nodecast.paths import names_a_file


@dataclass(frozen=True)
class SheetMatch:
    """A sheet found for a device name, and how: ``exact``, ``normalised`` (see the module docstring) or
    ``properties`` (a generic name told apart by what the trace records, said in ``detail``)."""

    sheet: GpuSheet
    how: str
    detail: str = ""

    def describe(self, name: str) -> str:
        """``'NVIDIA GeForce RTX 3090' is data sheet rtx-3090 (NVIDIA GeForce RTX 3090; exact device name)``."""
        how = {"exact": "exact device name", "properties": self.detail}.get(
            self.how, "name match ignoring case, punctuation and brand words")
        return f"{name!r} is data sheet {self.sheet.key} ({self.sheet.name}; {how})"


def _ambiguous(name: str, hits: list[GpuSheet], how: str) -> InputError:
    keys = ", ".join(sorted(s.key for s in hits))
    return InputError(f"GPU name {name!r} matches {len(hits)} data sheets by {how}: {keys}", key="GPU name",
                      hint="Name the sheet by its key (e.g. --from KEY), or make the sheets' device_names distinct")


def match_sheet(name: str, sheets: Sequence[GpuSheet] | None = None) -> SheetMatch | None:
    """The one sheet whose device names match ``name`` (exact, then normalised); None when none does.

    Raises InputError when two or more sheets match at the same step. Without
    ``sheets``, the catalogue's sheets that load are searched; when none
    matches and a sheet failed to load, that sheet's error is raised (it may
    have been the one). A generic name (``is_generic_gpu_name``) matches no sheet.
    """
    if is_generic_gpu_name(name):
        return None
    if sheets is None:
        loaded, errors = catalogue_sheets.loadable_sheets()
        hit = match_sheet(name, loaded)
        if hit is None and errors:
            raise errors[0]
        return hit
    exact = [s for s in sheets if name in s.device_names]
    if len(exact) > 1:
        raise _ambiguous(name, exact, "exact device name")
    if exact:
        return SheetMatch(exact[0], "exact")
    wanted = normalise_gpu_name(name)
    if not wanted:
        return None
    loose = [s for s in sheets
             if wanted in {normalise_gpu_name(n) for n in (*s.device_names, s.name, s.key)}]
    if len(loose) > 1:
        raise _ambiguous(name, loose, "normalised name")
    return SheetMatch(loose[0], "normalised") if loose else None


def find_sheet(name_or_key: str, sheets: Sequence[GpuSheet] | None = None) -> GpuSheet:
    """The sheet with key ``name_or_key``, else the one its device names match; InputError otherwise."""
    if sheets is None and names_a_file(catalogue_sheets.gpus_dir() / f"{name_or_key}.toml"):
        return catalogue_sheets.load_sheet(name_or_key)
    for s in sheets or ():
        if s.key == name_or_key:
            return s
    hit = match_sheet(name_or_key, sheets)
    if hit is None:
        raise InputError(f"no GPU data sheet for {name_or_key!r}", key="GPU name",
                         hint="See the keys and device names with `nodecast machines list`; add a sheet "
                              "(src/nodecast/machines/gpus/README.md) or write a machine file "
                              "(`nodecast machines template`)")
    return hit.sheet


def unambiguous_match(name: str) -> SheetMatch | None:
    """The catalogue sheet ``name`` matches (``match_sheet``), or None: where it matches none, or several."""
    try:
        return match_sheet(name)
    except InputError:  # ambiguous: no single sheet to compare with
        return None


def machine_sheet(machine: Machine) -> GpuSheet | None:
    """The machine's data sheet, else the one sheet its GPU model name matches, else None."""
    if machine.gpu.sheet is not None:
        return machine.gpu.sheet
    hit = unambiguous_match(machine.gpu.model)
    return None if hit is None else hit.sheet
