"""GPU memory bookkeeping: capacity, allocated chunks, LRU order, chunk cache (section 5).

The paper found GPU memory capacity "the most influential parameter" of the
runtime model: once the matrix outgrows the GPUs, data is evicted and moved
back and forth, saturating the bus (the performance drop of Figs. 1, 5 and 7).
``MemoryNode`` mirrors what StarPU 1.4 keeps per memory node:

* every replica that has memory on the node owns one *chunk* of its size;
  invalidating a replica (another node wrote the data) keeps the chunk;
* chunks are ordered least recently used first; ``wont_use`` moves a chunk to
  the front (StarPU's ``starpu_data_wont_use``);
* evicting a replica frees its chunk into a per-size cache that the next
  allocation of that size reuses at no cost (StarPU's memchunk cache), so only
  brand-new chunks pay ``cudaMalloc``;
* ``dirty`` counts replicas that hold the only valid copy of their data: they
  need a write-back to RAM before their chunk can be reused.

The runtime (``nodecast.runtime.simulation``) decides *when* to allocate, evict and
write back; this class only answers "is there room", "which chunk goes
next" and keeps the counts.
"""

from __future__ import annotations

from collections import OrderedDict


class MemoryNode:
    """Chunks of one GPU memory node.

    Attributes:
        capacity_bytes: usable memory (bytes).
        used_bytes: bytes held by chunks (replicas plus cached free chunks).
        lru: handle -> None for every replica with a chunk here, least recently used first.
        cache: size (bytes) -> number of free chunks kept for reuse.
        dirty: number of replicas here that are the only valid copy of their data.
        mallocs, frees, evictions, write_backs, reuses, purges: counters for reports
            (a *purge* is StarPU's memory reclaim: no clean chunk could be reused,
            so chunks were freed, dirty ones after a write-back).
    """

    __slots__ = (
        "node",
        "capacity_bytes",
        "used_bytes",
        "lru",
        "cache",
        "dirty",
        "mallocs",
        "frees",
        "evictions",
        "write_backs",
        "reuses",
        "peak_bytes",
        "full_events",
        "purges",
    )

    def __init__(self, node: int, capacity_bytes: float) -> None:
        self.node = node
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0.0
        self.lru: OrderedDict[int, None] = OrderedDict()
        self.cache: dict[int, int] = {}
        self.dirty = 0
        self.mallocs = 0
        self.frees = 0
        self.evictions = 0
        self.write_backs = 0
        self.reuses = 0
        self.peak_bytes = 0.0
        self.full_events = 0
        self.purges = 0

    def take_cached(self, size: int) -> bool:
        """Take a free chunk of ``size`` bytes from the cache; True when there was one."""
        n = self.cache.get(size, 0)
        if n:
            if n == 1:
                del self.cache[size]
            else:
                self.cache[size] = n - 1
            self.reuses += 1
            return True
        return False

    def fits(self, size: int) -> bool:
        """True when a new chunk of ``size`` bytes fits in the free memory."""
        return self.used_bytes + size <= self.capacity_bytes

    def add_chunk(self, size: int) -> None:
        """Account a freshly allocated chunk (``cudaMalloc``)."""
        self.used_bytes += size
        self.mallocs += 1
        if self.used_bytes > self.peak_bytes:
            self.peak_bytes = self.used_bytes

    def release_to_cache(self, size: int) -> None:
        """A replica's chunk becomes a free cached chunk."""
        self.cache[size] = self.cache.get(size, 0) + 1

    def free_cached(self, need: float) -> int:
        """Really free cached chunks until ``need`` bytes are free; returns how many chunks were freed."""
        freed = 0
        for size in sorted(self.cache, reverse=True):
            while self.cache.get(size, 0) and self.used_bytes + need > self.capacity_bytes:
                self.cache[size] -= 1
                if not self.cache[size]:
                    del self.cache[size]
                self.used_bytes -= size
                self.frees += 1
                freed += 1
        return freed
