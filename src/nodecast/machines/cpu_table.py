"""The ``[cpu]`` table that machine files and host files share: the host processors and host memory.

A host file (``nodecast.machines.hosts``) holds a machine file's ``[cpu]`` table with the same keys and the same
checks (``nodecast.machines.loader``); both read it here.
"""

from __future__ import annotations

from nodecast.machines.parts import CPU
from nodecast.machines.reader import Reader


def read_cpu(r: Reader) -> CPU:
    """The ``CPU`` a ``[cpu]`` table gives; ``numa_domains`` defaults to one per socket."""
    r.unknown_keys({"model", "sockets", "cores_per_socket", "clock_hz", "memory_bytes",
                    "memory_bandwidth_bps", "numa_domains", "copy_bandwidth_bps"})
    sockets = r.count("sockets")
    return CPU(
        model=r.string("model"),  # type: ignore[arg-type]
        sockets=sockets,  # type: ignore[arg-type]
        cores_per_socket=r.count("cores_per_socket"),  # type: ignore[arg-type]
        clock_hz=r.positive("clock_hz"),  # type: ignore[arg-type]
        memory_bytes=r.positive("memory_bytes"),  # type: ignore[arg-type]
        memory_bandwidth_bps=r.bandwidth("memory_bandwidth_bps"),  # type: ignore[arg-type]
        numa_domains=r.count("numa_domains", required=False) or sockets,  # type: ignore[arg-type]
        copy_bandwidth_bps=r.bandwidth("copy_bandwidth_bps", required=False),
    )
