"""Read and validate host files (``hosts/<key>.toml``): CPUs, host memory, and how GPUs attach.

A host file holds a machine file's ``[cpu]`` table (same keys, same checks)
plus what composing a node needs: the root ports' PCIe generation
(``pcie_gen``), the inter-socket bus (``[socket_bus]``) and, on hosts whose
CPU speaks a GPU link other than PCIe, that link (``[gpu_link]``). Format:
docs/machines.md.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nodecast.machines.catalogue_files import find_file, read_toml
from nodecast.machines.comments import value_comments
from nodecast.machines.cpu_table import read_cpu
from nodecast.machines.parts import Host, SheetLink
from nodecast.machines.reader import Reader
from nodecast.machines.topology import NVLINK_BPS_PER_LINK, PCIE_GT_PER_S

SCHEMA_VERSION = 1
_FIX = "Fix the host file (format: docs/machines.md)"
_KEY = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
#: The host a GPU is placed in when a node is composed without one (``rtx-3090``, ``--from`` omitted):
#: a DGX H100's 2x Xeon Platinum 8480C, PCIe gen5, so that no GPU's own PCIe link is slowed by the host.
DEFAULT_HOST = "xeon-platinum-8480c-2s"
#: Link kinds a host can offer its GPUs besides PCIe.
GPU_LINK_KINDS = ("nvlink", "nvlink-c2c", "infinity-fabric")


def hosts_dir() -> Path:
    """The folder of host files shipped with nodecast."""
    return Path(str(resources.files("nodecast.machines") / "hosts"))


def host_keys(folder: Path | None = None) -> list[str]:
    """Keys of the host files in ``folder`` (default: the catalogue), sorted."""
    return sorted(p.stem for p in (folder or hosts_dir()).glob("*.toml"))


def _gpu_link(r: Reader) -> SheetLink:
    r.unknown_keys({"kind", "gen", "links", "bandwidth_bps"})
    kind = r.choice("kind", GPU_LINK_KINDS)
    gen = r.count("gen", required=kind == "nvlink")
    if kind == "nvlink" and gen not in NVLINK_BPS_PER_LINK:
        raise r.fail("gen", f"unknown NVLink generation {gen} (known: 1-5)")
    return SheetLink(kind=kind, gen=gen,  # type: ignore[arg-type]
                     links=r.count("links", required=kind == "nvlink", high=18),
                     bandwidth_bps=r.bandwidth("bandwidth_bps", required=kind != "nvlink"))


def host_from_dict(data: dict[str, Any], path: Path | str, text: str = "") -> Host:
    """Validate a parsed host file and build the ``Host``."""
    path = Path(path)
    r = Reader(path, data, "", _FIX)
    r.unknown_keys({"schema_version", "key", "description", "pcie_gen", "cpu", "socket_bus", "gpu_link"})
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise r.fail("schema_version", f"must be {SCHEMA_VERSION} (got {version!r})")
    key = r.string("key")
    if not _KEY.match(key):  # type: ignore[arg-type]
        raise r.fail("key", f"{key!r} must be lower-case letters, digits and single dashes")
    if key != path.stem:
        raise r.fail("key", f"{key!r} must equal the file name {path.stem!r}", hint="Name the file <key>.toml")
    pcie_gen = r.count("pcie_gen")
    if pcie_gen not in PCIE_GT_PER_S:
        raise r.fail("pcie_gen", f"unknown PCIe generation {pcie_gen} (known: 1-6)")
    cpu = read_cpu(r.sub("cpu"))  # type: ignore[arg-type]
    bus = r.sub("socket_bus", required=False)
    if bus is not None:
        bus.unknown_keys({"bandwidth_bps"})
    link = r.sub("gpu_link", required=False)
    return Host(
        key=key,  # type: ignore[arg-type]
        description=r.string("description"),  # type: ignore[arg-type]
        cpu=cpu,
        pcie_gen=pcie_gen,  # type: ignore[arg-type]
        gpu_link=None if link is None else _gpu_link(link),
        socket_bus_bps=None if bus is None else bus.bandwidth("bandwidth_bps"),
        sources=MappingProxyType(value_comments(text)),
        path=path,
    )


def load_host_file(path: str | Path) -> Host:
    """Load and validate one host file."""
    path = Path(path)
    data, text = read_toml(path, "host file", _FIX,
                           missing_hint="Give a host key (nodecast machines list) or a TOML path")
    return host_from_dict(data, path, text)


def load_host(key_or_path: str | Path, folder: Path | None = None) -> Host:
    """A host by key (``xeon-platinum-8480c-2s``) or by path to a ``.toml`` file."""
    return load_host_file(find_file(key_or_path, folder or hosts_dir(), lambda: host_keys(folder), "host", "host"))


def all_hosts(folder: Path | None = None) -> list[Host]:
    """Every host file of ``folder`` (default: the catalogue), validated, by key."""
    return [load_host_file(p) for p in sorted((folder or hosts_dir()).glob("*.toml"))]
