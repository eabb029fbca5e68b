"""Find a GPU data sheet from a device name as profilers write it.

Profilers copy the driver's device name into traces (``cudaDeviceProp.name``,
rocminfo's marketing name): ``NVIDIA GeForce RTX 3090``, ``Tesla V100-SXM2-16GB``,
``AMD Instinct MI300X VF``. A sheet lists those names in ``device_names``.
Matching is deterministic and never guesses between sheets:

1. exact: the name is one of a sheet's ``device_names``;
2. normalised: the names agree after ``normalise_gpu_name`` (case,
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

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nodecast.errors import InputError
from nodecast.machines.parts import GpuSheet
from nodecast.paths import names_a_file

#: Leading brand words that drivers add or drop across versions ("Tesla K40c" vs "NVIDIA Tesla K40c",
#: "GeForce GTX 970" vs "NVIDIA GeForce GTX 970").
BRAND_WORDS = frozenset({"nvidia", "geforce", "tesla", "amd"})
#: Trailing words naming a virtual function of the same GPU (SR-IOV), not another product.
VIRTUAL_SUFFIXES = frozenset({"vf"})
_WORD = re.compile(r"[a-z0-9]+")
#: Normalised names that identify no product: the driver's name for boards it does not know, and the readers'
#: "device N" placeholder for a device the trace names not at all.
_GENERIC = re.compile(r"(graphicsdevice|device\d*|gpu\d*)")


def normalise_gpu_name(name: str) -> str:
    """``NVIDIA GeForce RTX 3090`` -> ``rtx3090``; ``AMD Instinct MI300X VF`` -> ``instinctmi300x``."""
    words = _WORD.findall(name.lower())
    while words and words[0] in BRAND_WORDS:
        words.pop(0)
    while words and words[-1] in VIRTUAL_SUFFIXES:
        words.pop()
    return "".join(words)


def is_generic_gpu_name(name: str) -> bool:
    """Whether a device name identifies no product ("Graphics Device", "NVIDIA Graphics Device", "device 0")."""
    return bool(_GENERIC.fullmatch(normalise_gpu_name(name)))


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
        from nodecast.machines.sheets import loadable_sheets

        loaded, errors = loadable_sheets()
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
    if sheets is None:
        from nodecast.machines.sheets import gpus_dir, load_sheet

        if names_a_file(gpus_dir() / f"{name_or_key}.toml"):
            return load_sheet(name_or_key)
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
