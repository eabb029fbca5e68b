"""The builder's edges: collected per kind as lists of arrays, then sorted by destination into the CSR an
``OpGraph`` holds (``opgraph``: ``indptr``, ``src``, ``kind``, ``anchor``, ``lag_s``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nodecast.graph.opgraph import EdgeKind
from nodecast.graph.order import csr_positions


@dataclass
class EdgeLists:
    """Edge lists collected per kind before the CSR is built."""

    src: list[np.ndarray]
    dst: list[np.ndarray]
    kind: list[np.ndarray]
    anchor: list[np.ndarray]
    lag: list[np.ndarray]

    @classmethod
    def new(cls) -> EdgeLists:
        return cls([], [], [], [], [])

    def add(self, src: np.ndarray, dst: np.ndarray, kind: EdgeKind, anchor: np.ndarray | int,
            lag: np.ndarray | float = 0.0) -> None:
        src = np.asarray(src, dtype=np.int32)
        n = len(src)
        if n == 0:
            return
        self.src.append(src)
        self.dst.append(np.asarray(dst, dtype=np.int32))
        self.kind.append(np.full(n, kind, dtype=np.int8))
        self.anchor.append(np.broadcast_to(np.asarray(anchor, dtype=np.int8), (n,)).copy())
        self.lag.append(np.broadcast_to(np.asarray(lag, dtype=np.float64), (n,)).copy())


def csr(edges: EdgeLists, n: int) -> tuple[np.ndarray, ...]:
    """The edge lists sorted by destination (CSR), scattered field by field.

    Each field goes straight from its per-kind parts to its sorted place, so
    that no concatenated copy of a field is ever held next to the sorted one.
    """
    if not edges.src:
        empty = np.zeros(0)
        return (np.zeros(n + 1, np.int64), empty.astype(np.int32), empty.astype(np.int8), empty.astype(np.int8),
                empty.astype(np.float64))
    dst = np.concatenate(edges.dst)
    edges.dst.clear()
    indptr, pos = csr_positions(dst, n)
    del dst
    out: list[np.ndarray] = [indptr]
    for parts, dtype in ((edges.src, np.int32), (edges.kind, np.int8), (edges.anchor, np.int8),
                         (edges.lag, np.float64)):
        field = np.empty(len(pos), dtype)
        lo = 0
        while parts:
            part = parts.pop(0)
            field[pos[lo : lo + len(part)]] = part
            lo += len(part)
        out.append(field)
    return tuple(out)
