"""Fakes for the calibration tests: a node topology and a measurer with known LogGP costs (no GPU).

Loaded by file path (``load_fakes``) from the calibration and command tests.
"""

from __future__ import annotations

from nodecast.calibrate import MeasureError, Point
from nodecast.calibrate import plan as P
from nodecast.calibrate.stats import Budget

#: 1-byte-ish latency L (s) and bandwidth B (B/s) of each class in the fake: T(n) = L + n / B.
LATENCY_S = {"htod_pageable": 8e-6, "dtoh_pageable": 9e-6, "htod_pinned": 5e-6, "dtoh_pinned": 5.5e-6,
             "dtod": 3e-6, "peer": 6e-6, "htod_managed": 20e-6, "dtoh_managed": 25e-6}
BANDWIDTH_BPS = {"htod_pageable": 10e9, "dtoh_pageable": 11e9, "htod_pinned": 25e9, "dtoh_pinned": 26e9,
                 "dtod": 800e9, "peer": 50e9, "htod_managed": 12e9, "dtoh_managed": 13e9}
#: FLOP/s of the fake peaks and B/s of the fake levels.
FMA_FLOPS, ADDMUL_FLOPS, LEVEL_BPS = 2e13, 1e13, 3e12
#: A fast budget: at most 5 repetitions per point, no warm-up.
TINY = Budget(measured_s=1e-3, min_reps=3, max_reps=5, wall_s=60.0, warmup_reps=0)


def fake_time_s(klass: str, n: int) -> float:
    """The fake's time for one copy of ``n`` bytes of ``klass``."""
    return LATENCY_S[klass] + n / BANDWIDTH_BPS[klass]


class FakeMeasurer:
    """A Measurer whose points take T = L + n/B (per class), without any GPU.

    ``fail`` maps a family key to an error raised at prepare; ``oom_from``
    makes sizes >= that many bytes fail as out of memory. Families without a
    class time like pinned copies; non-peer GPU pairs are 4x slower than peer ones.
    """

    def __init__(self, fail: dict[str, str] | None = None, oom_from: int | None = None) -> None:
        self.fail = fail or {}
        self.oom_from = oom_from
        self.prepared = 0
        self.released = 0

    def prepare(self, case: P.Case, n: int) -> Point:
        """The fake point."""
        fam = case.family
        if fam.key in self.fail:
            raise MeasureError(self.fail[fam.key])
        if self.oom_from is not None and n >= self.oom_from:
            raise MeasureError(f"cudaMalloc({n}) failed: cudaErrorMemoryAllocation (2)", out_of_memory=True)
        self.prepared += 1
        if fam.work == "flops":
            t = 1e12 / (FMA_FLOPS if fam.op == "peak_fma" else ADDMUL_FLOPS)
            return Point(lambda: t, 1e12, self._release)
        if fam.op == "level":
            return Point(lambda: 1e9 / LEVEL_BPS, 1e9, self._release)
        t = fake_time_s(fam.klass or "htod_pinned", n)
        if fam.klass == "peer" and not fam.peer:
            t *= 4
        work = 2 * n if "duplex" in fam.op else n
        return Point(lambda: t, float(work), self._release, label="fake")

    def _release(self) -> None:
        self.released += 1


def gpu(i: int, *, free: int = 79 << 30, cc: tuple[int, int] = (9, 0), numa: int | None = 0, **kw: object) -> P.GPUInfo:
    """A fake H100-like GPU."""
    return P.GPUInfo(i, "Fake H100", cc, 80 << 30, free, 132, 50 << 20, f"0000:{0x10 + i:02x}:00.0", numa, **kw)  # type: ignore[arg-type]


def topology(n_gpus: int = 2, *, peer: bool = True, numa_nodes: int = 1, **gpu_kw: object) -> P.Topology:
    """A fake node: ``n_gpus`` GPUs, all pairs peer-capable (or none), ``numa_nodes`` nodes of 2 CPUs."""
    gpus = tuple(gpu(i, numa=(i % numa_nodes), **gpu_kw) for i in range(n_gpus))  # type: ignore[arg-type]
    nodes = tuple(P.NumaNode(k, (2 * k, 2 * k + 1), 64 << 30) for k in range(numa_nodes))
    pairs = frozenset((a, b) for a in range(n_gpus) for b in range(n_gpus) if a != b) if peer else frozenset()
    return P.Topology(gpus, nodes, pairs, 128 << 30)
