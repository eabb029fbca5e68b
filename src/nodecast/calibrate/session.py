"""A calibration session: this node's GPUs (through cuda-python) and host, opened and described.

``Session.open`` opens CUDA, reads each GPU's properties, peer access and
NUMA node, and the host's governors, caches and NUMA nodes; the facts go into
the machine file and the benchmark JSON, the topology into the plan, and
``Session.measurer`` gives the ``nodecast.calibrate.transfers.CudaMeasurer``
that measures on them.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from typing import Any

from nodecast.calibrate import host
from nodecast.calibrate.cuda import Cuda
from nodecast.calibrate.plan import GPUInfo, Topology
from nodecast.calibrate.run import MeasureError
from nodecast.calibrate.transfers import CudaMeasurer
from nodecast.errors import GPUUnavailableError


@dataclass
class Session:
    """This node's GPUs and host, opened for calibration.

    ``facts`` are strings for the machine file (governor, NUMA, link status
    per GPU...); ``context`` goes into the benchmark JSON's ``context``.
    """

    cuda: Cuda
    topology: Topology
    facts: dict[str, str]
    context: dict[str, Any]
    governor_warning: str | None = None
    _measurer: CudaMeasurer | None = None

    @classmethod
    def open(cls) -> Session:
        """Open CUDA (GPUUnavailableError without driver or device) and probe the host."""
        cuda = Cuda.open()
        nodes = host.numa_nodes()
        gpus = []
        try:
            for d in cuda.devices:
                free, _ = cuda.mem_info(d.index)
                gpus.append(GPUInfo(
                    index=d.index, name=d.name, cc=d.cc, total_bytes=d.total_bytes, free_bytes=free, sms=d.sms,
                    l2_bytes=d.l2_bytes, bus_id=d.bus_id, numa_node=host.pci_numa_node(d.bus_id),
                    can_map_host=d.can_map_host, managed=d.managed, concurrent_managed=d.concurrent_managed,
                ))
            peer = frozenset((a.index, b.index) for a in gpus for b in gpus
                             if a.index != b.index and cuda.can_access_peer(a.index, b.index))
        except MeasureError as exc:
            raise GPUUnavailableError(f"a GPU does not answer ({exc})",
                                      hint="Check nvidia-smi; select working GPUs with CUDA_VISIBLE_DEVICES") from None
        topo = Topology(tuple(gpus), nodes, peer, host.mem_available_bytes(), mmap.PAGESIZE)
        governors = host.read_governors()
        llc = host.llc_bytes()
        facts = host.host_facts(governors, nodes, host.FLUSH_FACTOR * llc if llc else host.FLUSH_FALLBACK_BYTES)
        driver = host.nvidia_driver_version()
        facts["cuda"] = (f"NVIDIA driver {driver or 'unknown'}, CUDA driver API {cuda.driver_version}, "
                         f"runtime {cuda.runtime_version}, cuda-python {cuda.b.version}")
        for g in gpus:
            link = host.pci_link_status(g.bus_id)
            facts[f"gpu{g.index}"] = (f"{g.name} (sm_{g.cc[0]}{g.cc[1]}, {g.sms} SMs, {g.total_bytes / 2**30:.1f} GiB) "
                                      f"at PCI {g.bus_id}, NUMA node {g.numa_node if g.numa_node is not None else 'unknown'}"
                                      + (f", link {link}" if link else ""))
        if len(gpus) > 1:
            facts["peer_access"] = ", ".join(f"{a}->{b}" for a, b in sorted(peer)) or "none"
        context = {
            "cuda_driver_version": cuda.driver_version,
            "cuda_runtime_version": cuda.runtime_version,
            "nvidia_driver_version": driver or "unknown",
            "cuda_python_version": cuda.b.version,
            "gpus": [{"index": g.index, "name": g.name, "compute_capability": f"{g.cc[0]}.{g.cc[1]}",
                      "pci_bus_id": g.bus_id, "numa_node": g.numa_node, "total_bytes": g.total_bytes,
                      "free_bytes": g.free_bytes} for g in gpus],
            "caches": host.caches(),
            "cpu_scaling_enabled": any(v != "performance" for v in governors.values()),
        }
        return cls(cuda, topo, facts, context, host.governor_warning(governors))

    def measurer(self, *, gate: bool = True) -> CudaMeasurer:
        """The measurer for this session's GPUs."""
        self._measurer = CudaMeasurer(self.cuda, self.topology, gate_enabled=gate)
        return self._measurer

    @property
    def driver(self) -> str:
        """Driver versions for the machine file's ``measured.driver``."""
        return self.facts.get("cuda", "")

    def close(self) -> None:
        """Free what the measurer kept (gates)."""
        if self._measurer is not None:
            self._measurer.close()
