"""The host side of calibration: CPU governor, NUMA nodes and binding, cache flushing, facts.

Everything reads Linux's ``/sys`` and ``/proc`` (paths are parameters so
tests can point them at fixtures); nothing needs a GPU or root.

Pitfalls handled here (Comm|Scope section 2.2, ../shared/reference/MEASUREMENT.md):

* **CPU frequency governor**: read from
  ``/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`` and reported
  (Comm|Scope reports it too; it also tries to set ``performance``, which
  needs root - nodecast only reads and reports, and never changes system
  settings).
* **NUMA**: ``bind_to_numa`` pins the *calling thread* to the CPUs of one
  node with ``os.sched_setaffinity``. Host memory is then placed by Linux's
  default first-touch policy on that node: nodecast touches (writes) every
  page of a pageable buffer from the bound thread, and cudaHostAlloc /
  cudaHostRegister / managed-memory pages are faulted in by the driver from
  that thread. It does **not** call ``mbind``/``set_mempolicy`` (no libnuma
  from Python), so a process-wide policy (``numactl --interleave``) or a
  node short of memory can place pages elsewhere; ``numa_placement`` reads
  ``/proc/self/numa_maps`` afterwards so the placement is checked and
  reported, not assumed. The CUDA driver's own threads are not bound.
* **CPU caches**: Python cannot issue ``clflush``/``dcbf``. ``CacheFlusher``
  evicts instead, by a read-modify-write pass (``np.add(buf, 1, out=buf)``)
  over a buffer larger than the last-level cache, from the bound thread, so
  the lines of the measured buffer are replaced in that socket's caches. A
  plain ``memset`` would not do: glibc switches to non-temporal stores for
  large sizes, which bypass the cache. Eviction is probabilistic where
  ``clflush`` is exact (caches are not strictly LRU); the buffer is twice the
  LLC to make a leftover line unlikely, and the docs say so.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nodecast.calibrate.plan import NumaNode

SYS_CPU = Path("/sys/devices/system/cpu")
SYS_NODE = Path("/sys/devices/system/node")
SYS_PCI = Path("/sys/bus/pci/devices")
PROC = Path("/proc")

#: The eviction buffer is this many times the last-level cache.
FLUSH_FACTOR = 2
#: Eviction buffer size when the LLC size cannot be read (a 64 MiB buffer covers most server LLCs per socket).
FLUSH_FALLBACK_BYTES = 64 << 20


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


# -- CPU governor ------------------------------------------------------------------------


def read_governors(root: Path = SYS_CPU) -> dict[int, str]:
    """``scaling_governor`` of every CPU that has one: {cpu number: governor}."""
    out: dict[int, str] = {}
    for path in sorted(root.glob("cpu[0-9]*/cpufreq/scaling_governor")):
        m = re.fullmatch(r"cpu(\d+)", path.parent.parent.name)
        value = _read(path)
        if m and value:
            out[int(m.group(1))] = value
    return out


def governor_summary(governors: dict[int, str]) -> str:
    """One line: ``performance on all 64 CPUs``, ``powersave on 32 CPUs, performance on 32 CPUs``, or why unknown."""
    if not governors:
        return "unknown (no cpufreq/scaling_governor in sysfs: a VM, a container, or no cpufreq driver)"
    counts: dict[str, int] = {}
    for g in governors.values():
        counts[g] = counts.get(g, 0) + 1
    if len(counts) == 1:
        (g, n), = counts.items()
        return f"{g} on all {n} CPUs"
    return ", ".join(f"{g} on {n} CPUs" for g, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def governor_warning(governors: dict[int, str]) -> str | None:
    """A warning when some CPU's governor is not ``performance`` (None otherwise, or when unknown)."""
    slow = sorted({g for g in governors.values() if g != "performance"})
    if not slow:
        return None
    return (
        f"CPU frequency governor is {', '.join(slow)} on some CPUs, not performance: host-side costs "
        "(pageable staging, unified-memory faults) vary with the clock. As root: cpupower frequency-set --governor performance"
    )


# -- NUMA -------------------------------------------------------------------------------


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Linux cpulist ``0-3,8,10-11`` -> (0, 1, 2, 3, 8, 10, 11); empty text -> ()."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return tuple(cpus)


def numa_nodes(root: Path = SYS_NODE) -> tuple[NumaNode, ...]:
    """Every NUMA node with its CPUs and MemTotal; one node 0 with every CPU when sysfs has no nodes."""
    nodes = []
    for path in sorted(root.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        cpus = parse_cpulist(_read(path / "cpulist") or "")
        mem = 0
        meminfo = _read(path / "meminfo") or ""
        m = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
        if m:
            mem = int(m.group(1)) * 1024
        nodes.append(NumaNode(int(path.name[4:]), cpus, mem))
    if not nodes:
        nodes.append(NumaNode(0, tuple(sorted(os.sched_getaffinity(0))), 0))
    return tuple(nodes)


def pci_numa_node(bus_id: str, root: Path = SYS_PCI) -> int | None:
    """NUMA node of a PCI device (``0000:3b:00.0``), None when unknown (-1 or no sysfs entry)."""
    text = _read(root / normalize_bus_id(bus_id) / "numa_node")
    if text is None:
        return None
    try:
        node = int(text)
    except ValueError:
        return None
    return node if node >= 0 else None


def normalize_bus_id(bus_id: str) -> str:
    """``00000000:3B:00.0`` or ``0000:3B:00.0`` -> sysfs's ``0000:3b:00.0``."""
    text = bus_id.strip().lower()
    parts = text.split(":")
    if len(parts) == 3:
        parts[0] = parts[0][-4:].rjust(4, "0")
    elif len(parts) == 2:
        parts.insert(0, "0000")
    return ":".join(parts)


def pci_link_status(bus_id: str, root: Path = SYS_PCI) -> str | None:
    """``16.0 GT/s PCIe x16 (max 16.0 GT/s PCIe x16)`` from sysfs (what ``lspci -vv`` calls LnkSta/LnkCap)."""
    path = root / normalize_bus_id(bus_id)
    speed, width = _read(path / "current_link_speed"), _read(path / "current_link_width")
    if speed is None or width is None:
        return None
    text = f"{speed} x{width}"
    mspeed, mwidth = _read(path / "max_link_speed"), _read(path / "max_link_width")
    if mspeed and mwidth:
        text += f" (max {mspeed} x{mwidth})"
    return text


@contextlib.contextmanager
def bind_to_numa(node: NumaNode | None) -> Iterator[tuple[int, ...]]:
    """Pin the calling thread to ``node``'s CPUs for the block; restore the previous affinity after.

    Yields the CPUs the thread runs on. With ``node`` None, or a node whose
    CPUs are not all allowed to this process (a cgroup), the affinity is
    left as it is, and the yielded CPUs say so.
    """
    before = os.sched_getaffinity(0)
    if node is None or not node.cpus:
        yield tuple(sorted(before))
        return
    target = set(node.cpus) & before
    if not target:
        yield tuple(sorted(before))
        return
    os.sched_setaffinity(0, target)
    try:
        yield tuple(sorted(target))
    finally:
        os.sched_setaffinity(0, before)


def parse_numa_maps(text: str, address: int) -> dict[int, int] | None:
    """Pages per NUMA node of the mapping of ``/proc/<pid>/numa_maps`` that contains ``address``.

    numa_maps lists each mapping by its start address only; the mapping that
    contains ``address`` is the one with the largest start <= address. Pages
    not yet faulted in are not counted. Returns None when no mapping starts
    at or below ``address``.
    """
    best: tuple[int, str] | None = None
    for line in text.splitlines():
        head, _, rest = line.partition(" ")
        try:
            start = int(head, 16)
        except ValueError:
            continue
        if start <= address and (best is None or start > best[0]):
            best = (start, rest)
    if best is None:
        return None
    return {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"\bN(\d+)=(\d+)", best[1])}


def numa_placement(address: int, proc: Path = PROC) -> dict[int, int] | None:
    """Pages per NUMA node backing ``address`` in this process (None: numa_maps unreadable)."""
    text = _read(proc / "self" / "numa_maps")
    return None if text is None else parse_numa_maps(text, address)


def placement_text(pages: dict[int, int] | None, expected: int | None) -> str:
    """``N0=100%`` or ``N0=60% N1=40% (expected N1)`` or ``unknown``."""
    if not pages:
        return "unknown"
    total = sum(pages.values())
    text = " ".join(f"N{n}={100 * c / total:.0f}%" for n, c in sorted(pages.items()))
    if expected is not None and set(pages) != {expected}:
        text += f" (expected N{expected})"
    return text


# -- caches ------------------------------------------------------------------------------


def parse_cache_size(text: str) -> int:
    """sysfs cache ``size`` (``32768K``, ``1M``, ``512``) -> bytes."""
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if t and t[-1] in mult:
        return int(t[:-1]) * mult[t[-1]]
    return int(t)


def caches(root: Path = SYS_CPU, cpu: int = 0) -> list[dict[str, object]]:
    """CPU caches of one CPU as Google Benchmark's context lists them: type, level, size (bytes), num_sharing."""
    out = []
    for idx in sorted((root / f"cpu{cpu}" / "cache").glob("index[0-9]*")):
        level, size, ctype = _read(idx / "level"), _read(idx / "size"), _read(idx / "type")
        if not (level and size and ctype):
            continue
        shared = parse_cpulist(_read(idx / "shared_cpu_list") or "")
        out.append({"type": ctype, "level": int(level), "size": parse_cache_size(size), "num_sharing": len(shared) or 1})
    return out


def llc_bytes(root: Path = SYS_CPU, cpu: int = 0) -> int | None:
    """Size of the last-level (highest-level data or unified) cache of ``cpu``, None when sysfs lacks it."""
    data = [c for c in caches(root, cpu) if c["type"] in ("Data", "Unified")]
    if not data:
        return None
    top = max(int(c["level"]) for c in data)  # type: ignore[call-overload]
    return max(int(c["size"]) for c in data if c["level"] == top)  # type: ignore[call-overload]


@dataclass
class CacheFlusher:
    """Evicts host buffers from the CPU caches by a read-modify-write pass over a larger buffer.

    See the module docstring for why (no ``clflush`` from Python) and the
    limits. Create one per NUMA node from a thread bound to it, so that its
    pages are local and the pass runs on that socket.
    """

    size_bytes: int

    def __post_init__(self) -> None:
        words = max(1, self.size_bytes // 8)
        self._buf = np.zeros(words, dtype=np.uint64)  # zeros + the first pass touch every page

    def flush(self) -> None:
        """One pass: every line of the buffer is read and written, replacing older lines in the caches."""
        np.add(self._buf, 1, out=self._buf)

    @classmethod
    def for_this_host(cls, root: Path = SYS_CPU) -> CacheFlusher:
        """A flusher ``FLUSH_FACTOR`` times the LLC of CPU 0 (``FLUSH_FALLBACK_BYTES`` when unknown)."""
        llc = llc_bytes(root)
        return cls(FLUSH_FACTOR * llc if llc else FLUSH_FALLBACK_BYTES)


# -- host facts --------------------------------------------------------------------------


def mem_available_bytes(proc: Path = PROC) -> int:
    """``MemAvailable`` of /proc/meminfo in bytes (0 when unreadable)."""
    m = re.search(r"MemAvailable:\s+(\d+)\s*kB", _read(proc / "meminfo") or "")
    return int(m.group(1)) * 1024 if m else 0


def cpu_model(proc: Path = PROC) -> str:
    """``model name`` of /proc/cpuinfo (POWER: ``cpu``), else the platform's processor string."""
    text = _read(proc / "cpuinfo") or ""
    for key in ("model name", "cpu"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.MULTILINE)
        if m:
            return m.group(1).strip()
    return platform.processor() or platform.machine()


def nvidia_driver_version(proc: Path = PROC) -> str | None:
    """The NVIDIA kernel-module version (``550.54.15``) from /proc/driver/nvidia/version, None without one."""
    return parse_nvidia_version(_read(proc / "driver" / "nvidia" / "version") or "")


def parse_nvidia_version(text: str) -> str | None:
    """The version of an ``NVRM version: NVIDIA UNIX ... Kernel Module  550.54.15  ...`` line."""
    m = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)", text)
    return m.group(1) if m else None


def host_facts(governors: dict[int, str], nodes: tuple[NumaNode, ...], flusher_bytes: int | None) -> dict[str, str]:
    """The host facts a machine file and the benchmark JSON carry (strings)."""
    facts = {
        "cpu_model": cpu_model(),
        "kernel": f"{platform.system()} {platform.release()}",
        "cpu_governor": governor_summary(governors),
        "numa_nodes": "; ".join(
            f"node {n.id}: CPUs {_cpulist_text(n.cpus)}, {n.memory_bytes / 2**30:.1f} GiB" for n in nodes
        ),
        "numa_binding": (
            "measuring thread pinned to the NUMA node's CPUs (os.sched_setaffinity); host pages placed by "
            "first touch from that thread and checked in /proc/self/numa_maps; no mbind, driver threads not bound"
            if len([n for n in nodes if n.cpus]) > 1
            else "single NUMA node: nothing to bind"
        ),
    }
    if flusher_bytes:
        facts["cache_flush"] = (
            f"before each repetition of a _flush case, a read-modify-write pass over a {flusher_bytes / 2**20:.0f} MiB "
            "buffer (2x the last-level cache) evicts the host buffer; no clflush from Python"
        )
    return facts


def _cpulist_text(cpus: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 8) -> ``0-3,8``."""
    if not cpus:
        return "none"
    runs = []
    start = prev = cpus[0]
    for c in cpus[1:]:
        if c == prev + 1:
            prev = c
            continue
        runs.append(f"{start}-{prev}" if prev > start else f"{start}")
        start = prev = c
    runs.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ",".join(runs)
