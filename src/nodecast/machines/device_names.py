"""What a GPU's device name says by itself: its normalised form, and whether it names a product at all.

Drivers and profilers write one GPU's name in several forms (``NVIDIA GeForce RTX 3090``, ``GeForce RTX 3090``,
``AMD Instinct MI300X VF``); ``normalise_gpu_name`` maps them onto one. Some names identify no product
(``is_generic_gpu_name``). The sheet reader (``nodecast.machines.sheets``) refuses such names in ``device_names``,
and name matching (``nodecast.machines.names``) compares normalised names; both build on this module.
"""

from __future__ import annotations

import re

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
