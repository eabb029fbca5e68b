"""A StarPU-like task runtime on the discrete-event engine (Stanisic et al., sections 3-7).

What is modelled, and where it comes from:

Submission (section 3)
    The application thread submits tasks in order, one every
    ``Overheads.task_submit_s`` (StarPU 1.4's simulated submission cost, 1 µs).
    A task whose dependencies are done when it is submitted is pushed to the
    scheduler at its submission time; otherwise when its last predecessor ends.
Workers (section 4)
    ``workers="gpus"``: one worker per GPU, CPUs only drive them (the paper's
    setting); ``workers="all"``: GPU workers plus one CPU worker per remaining
    core (StarPU's default reserves one core per GPU driver). A GPU worker
    fetches the input of one task at a time and keeps up to ``pipeline`` (2)
    tasks queued on its device; queuing a kernel costs the driver
    ``gpu_queue_s``; kernels without ``async`` (POTRF, GETRF) run synchronously
    and block the driver.
Data (section 5)
    MSI-like coherence per data handle and memory node: reads create replicas,
    a write invalidates every other replica. GPU memory is bounded
    (``MemoryNode``): StarPU 1.4 uses 90 % of the device memory, in whole MiB
    (``gpu_memory_margin``). A replica to bring in needs a chunk: a cached
    chunk, a new one (``cudaMalloc`` cost, serialised across GPUs as StarPU's
    simulated allocator is), or the chunk of a clean replica (valid elsewhere),
    least recently used first. When no clean chunk can be taken StarPU
    *purges*: it frees twice the needed size, writing dirty replicas back to RAM
    first, pays ``cudaFree`` per chunk (which also waits for every transfer in
    flight) and ``cudaMalloc``; the GPU's driver handles nothing else meanwhile.
    Idle requests never evict; prefetches do not evict data prefetched for
    another queued task. ``wont_use`` hints move chunks to the front of the
    eviction order and queue an idle write-back; when fewer than 5 % of a
    GPU's chunks are clean, idle write-backs are queued until 10 % are
    (StarPU's minimum/target clean buffers).
Requests and transfers (section 6)
    Each GPU handles its requests (fetch before prefetch before idle; at most 20
    in flight, 10 prefetches, 1 idle). A transfer costs ``transfer_queue_s``
    (10 µs, Table 2), then obeys StarPU's stream rules: transfers between the
    same pair of nodes are sequential, crossed GPU<->GPU transfers are
    sequential, GPU->GPU transfers are sequential with transfers into either
    GPU. Then it flows through the fluid network (max-min bandwidth sharing
    over per-pair links and the shared PCI/Host links). GPU->GPU copies go
    peer-to-peer where allowed, else through RAM.
Computation (section 7)
    Kernel durations come from ``KernelModels`` (mean, or sampled).

The result is a ``SimResult`` (``nodecast.runtime.outputs``).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from heapq import heappush
from itertools import compress

import numpy as np

from nodecast.errors import InputError
from nodecast.graph.opgraph import OpGraph
from nodecast.graph.taskgraph import RW, R, W, TaskGraph, task_data
from nodecast.engine.events import Environment
from nodecast.runtime.memory import MemoryNode
from nodecast.engine.network import FluidNetwork
from nodecast.models.history import KernelModels
from nodecast.engine.platform import RAM, Platform

FETCH, PREFETCH, IDLE = 0, 1, 2
_MIB = 1 << 20


@dataclass(frozen=True)
class Overheads:
    """Runtime overheads in seconds (the paper's Table 2, with StarPU 1.4's simulated values).

    Table 2 lists transfer-queue management 10 µs, cudaMalloc 175 µs, cudaFree
    125 µs and pinned host allocation 650 µs/MB. StarPU 1.4's simulation charges
    10 µs per transfer and per queued GPU kernel, 175 µs per cudaMalloc and
    750 µs per cudaFree (both under one global lock), 1 µs per task submission,
    650 µs/MiB for pinned host memory (not used by these applications, whose
    matrix is registered, not allocated, in simulation).
    """

    task_submit_s: float = 1e-6
    transfer_queue_s: float = 10e-6
    gpu_queue_s: float = 10e-6
    cuda_malloc_s: float = 175e-6
    cuda_free_s: float = 750e-6
    pinned_alloc_s_per_byte: float = 650e-6 / _MIB

    @classmethod
    def none(cls) -> Overheads:
        """No runtime overhead at all (the paper's "naive" simulation of Fig. 1)."""
        return cls(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass
class RuntimeOptions:
    """How the runtime behaves. Defaults follow StarPU 1.4.

    Attributes:
        scheduler: policy name (``nodecast.runtime.schedulers.SCHEDULERS``).
        workers: ``"gpus"`` (CPUs only drive GPUs, the paper's setting) or
            ``"all"`` (CPU workers too).
        n_cpu_workers: CPU workers with ``workers="all"`` (default: cores minus
            one per GPU, as StarPU reserves a core per GPU driver).
        pipeline: kernels a GPU worker may have queued on its device
            (``STARPU_CUDA_PIPELINE``, 2); 0 makes every kernel synchronous.
        prefetch: prefetch inputs when a task is assigned (dmda family, random, heft).
        sharing: ``"maxmin"`` or ``"cm02"`` bandwidth sharing (``nodecast.engine.network``).
        overheads: runtime overheads (Table 2).
        seed: seed of the random policy (kernel sampling has its own, in ``KernelModels``).
        trace: record every task, transfer and eviction (for traces and Gantt charts).
        alpha, beta: dmda's weights of termination time and transfer time.
        max_requests, max_prefetch_requests, max_idle_requests: StarPU's limits
            on requests in flight per channel (handling node, peer node, direction).
        min_clean_fraction, target_clean_fraction: StarPU's minimum and target
            share of clean chunks per GPU (5 % and 10 %).
        gpu_memory_margin: share of GPU memory StarPU uses (``FREE_MARGIN``, 0.9,
            counted in whole MiB); None uses the platform's memory as is.
    """

    scheduler: str = "dmda"
    workers: str = "gpus"
    n_cpu_workers: int | None = None
    pipeline: int = 2
    prefetch: bool = True
    sharing: str = "maxmin"
    overheads: Overheads = field(default_factory=Overheads)
    seed: int = 0
    trace: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    max_requests: int = 20
    max_prefetch_requests: int = 10
    max_idle_requests: int = 1
    min_clean_fraction: float = 0.05
    target_clean_fraction: float = 0.10
    gpu_memory_margin: float | None = 0.9


class Worker:
    """A processing unit: a GPU (with its driver) or a CPU core."""

    __slots__ = (
        "wid",
        "name",
        "kind",
        "node",
        "devid",
        "pipeline",
        "fetching",
        "ondevice",
        "free_at",
        "blocked",
        "busy_s",
        "ntasks",
        "arch_index",
        "is_gpu",
    )

    def __init__(self, wid: int, name: str, kind: str, node: int, devid: int, pipeline: int, arch_index: int) -> None:
        self.wid = wid
        self.name = name
        self.kind = kind
        self.is_gpu = kind == "cuda"
        self.node = node
        self.devid = devid
        self.pipeline = pipeline
        self.fetching = -1
        self.ondevice = 0
        self.free_at = 0.0
        self.blocked = False
        self.busy_s = 0.0
        self.ntasks = 0
        self.arch_index = arch_index


class Request:
    """A copy of data handle ``h`` into memory node ``dst`` (one or two hops), and who waits for it."""

    __slots__ = ("h", "dst", "kind", "handler", "ch", "waiters", "state", "queued")

    def __init__(self, h: int, dst: int, kind: int, handler: int, ch: int) -> None:
        self.h = h
        self.dst = dst
        self.kind = kind
        self.handler = handler
        self.ch = ch
        self.waiters: list = []
        self.state = 0  # 0 queued, 1 dispatched, 2 done, 3 dropped
        self.queued = True


class Hop:
    """One transfer between two memory nodes through the fluid network."""

    __slots__ = ("h", "src", "dst", "size", "version", "nwait", "wake", "done", "cont", "arg", "t_issue", "t_start", "flow", "seq")

    def __init__(self, h, src, dst, size, version, cont, arg, t_issue) -> None:
        self.h = h
        self.src = src
        self.dst = dst
        self.size = size
        self.version = version
        self.nwait = 0
        self.wake: list[Hop] = []
        self.done = False
        self.cont = cont
        self.arg = arg
        self.t_issue = t_issue
        self.t_start = math.nan
        self.flow = None


class Simulation:
    """One simulated execution of the task graph ``graph`` (an OpGraph; a ``TaskGraph`` builder is built) on ``platform``.

    Raises InputError at construction for a kernel without a model, a task whose
    data cannot fit in a GPU's memory, or an unknown scheduler; ValueError for
    a graph without tasks' data accesses (a traced program's graph) or with a
    task already placed on a device (the scheduler places every task).
    """

    def __init__(self, graph: OpGraph | TaskGraph, platform: Platform, models: KernelModels, options: RuntimeOptions | None = None) -> None:
        from nodecast.runtime.schedulers import Scheduler, make_scheduler

        if isinstance(graph, TaskGraph):
            graph = graph.build()
        td = task_data(graph)
        placed = graph.ops["device"] >= 0
        if placed.any():
            t = int(placed.argmax())
            msg = (f"task {graph.names[t]!r} is placed on device {int(graph.ops['device'][t])}: the simulator's "
                   "schedulers place every task (device -1); a recorded placement is replayed with nodecast.engine.replay")
            raise ValueError(msg)
        self.graph = graph
        self.tasks = td
        self.platform = platform
        self.models = models
        self.opt = options or RuntimeOptions()
        self.env = Environment()
        self.net = FluidNetwork(self.env, platform.link_bandwidth_bps, names=platform.link_names, sharing=self.opt.sharing)
        self.notes: list[str] = list(platform.notes) + list(graph.notes)
        self._setup_workers()
        self._setup_tasks()
        self._setup_data()
        self.sched = make_scheduler(self.opt.scheduler, self)
        # NOTE: most policies keep the base class's no-op hook; skip the call per task then.
        hook = type(self.sched).after_completion
        self._after_completion = None if hook is Scheduler.after_completion else self.sched.after_completion
        self.current_worker = -1
        self.makespan_s = 0.0
        self.finished = 0
        self.trace_tasks: list[tuple[int, int, float, float]] = []
        self.trace_hops: list[tuple[int, int, int, int, float, float]] = []
        self.trace_evictions: list[tuple[float, int, int, bool]] = []

    # ------------------------------------------------------------------ setup
    def _setup_workers(self) -> None:
        plat, opt = self.platform, self.opt
        if opt.workers not in ("gpus", "all"):
            raise InputError(f"workers must be 'gpus' or 'all' (got {opt.workers!r})", key="--workers")
        if opt.pipeline < 0:
            raise InputError(f"pipeline must be >= 0 (got {opt.pipeline})", key="--pipeline")
        if opt.n_cpu_workers is not None and opt.n_cpu_workers < 0:
            raise InputError(f"CPU workers must be >= 0 (got {opt.n_cpu_workers})", key="--ncpus")
        self.workers: list[Worker] = []
        self.arches: list[tuple[str, int]] = []
        for g in plat.gpu_nodes:
            arch = ("cuda", plat.model_devid[g])
            if arch not in self.arches:
                self.arches.append(arch)
            self.workers.append(
                Worker(len(self.workers), plat.node_names[g], "cuda", g, plat.model_devid[g], max(1, opt.pipeline), self.arches.index(arch))
            )
        self.sync_gpu = opt.pipeline == 0
        if opt.workers == "all":
            ncpu = opt.n_cpu_workers if opt.n_cpu_workers is not None else max(0, plat.n_cpus - len(plat.gpu_nodes))
            if ncpu:
                self.arches.append(("cpu", 0))
            for i in range(ncpu):
                self.workers.append(Worker(len(self.workers), f"CPU{i}", "cpu", RAM, 0, 1, len(self.arches) - 1))
        if not self.workers:
            raise InputError("no worker to run tasks (the platform has no GPU and no CPU worker was requested)", key="--workers")

    def _setup_tasks(self) -> None:
        g, td, models = self.graph, self.tasks, self.models
        n = len(g)
        self.n_tasks = n
        ops = g.ops
        # The runtime walks per-task state tens of thousands of times per run: plain
        # lists and tuples of Python ints (converted once from the graph's columns).
        kernel, size_bytes = ops["kernel_id"].tolist(), ops["size_bytes"].tolist()
        footprint = [None if f < 0 else f for f in ops["footprint"].tolist()]
        flops = ops["flops"].tolist()
        self.task_kernel = kernel
        self.task_priority = ops["priority"].tolist()
        task_handles, task_modes, succs = td.as_lists()
        types: dict[tuple[int, int, int | None], int] = {}
        self.type_len: list[list[float]] = []  # [type][arch] mean duration (s)
        self.type_samplers: list[list] = []
        self.type_flops: list[float] = []
        # NOTE: types are numbered in order of first occurrence, as a plain loop
        # over the tasks would; the per-task work is done by C-level zip/map.
        keys = list(zip(kernel, size_bytes, footprint, strict=True))
        first = dict(zip(reversed(keys), range(n - 1, -1, -1)))
        # One generator per simulation: a run draws the same durations whether it runs alone or in a sweep.
        rng = models.generator() if models.mode != "mean" else None
        for t in sorted(first.values()):
            key = keys[t]
            types[key] = len(self.type_len)
            kname = td.kernels[kernel[t]]
            lens = []
            samplers = []
            for kind, devid in self.arches:
                mean = models.expected_s(kname, kind, devid, size_bytes[t], footprint[t], flops[t])
                lens.append(mean)
                samplers.append(models.sampler(kname, kind, devid, size_bytes[t], mean, rng))
            self.type_len.append(lens)
            self.type_samplers.append(samplers)
        self.task_type = list(map(types.__getitem__, keys))
        self.notes.extend(models.notes)
        # NOTE: few distinct mode tuples exist; their read masks are computed once,
        # and a task that reads everything it accesses shares its handle tuple.
        read_mask = {ms: tuple([m & R for m in ms]) for ms in set(task_modes)}
        read_all = {ms: all(mask) for ms, mask in read_mask.items()}
        self.task_reads = [hs if read_all[ms] else tuple(compress(hs, read_mask[ms])) for hs, ms in zip(task_handles, task_modes, strict=True)]
        # NOTE: (handle, mode) pairs are zipped where they are walked (twice per
        # task) rather than materialised for every task up front.
        self.task_modes = task_modes
        self.task_async = [a and not self.sync_gpu for a in ops["async"].tolist()]
        # successors in declaration order: the order StarPU releases them in
        self.succs = succs
        self.task_handles = task_handles
        self.gpu_queue_s = self.opt.overheads.gpu_queue_s
        self.tracing = self.opt.trace
        # tidy when clean < min_clean x chunks, i.e. dirty > (1 - min_clean) x chunks
        self.min_dirty_fraction = 1.0 - self.opt.min_clean_fraction
        self.npending = np.diff(g.indptr).tolist()
        self.task_worker = [-1] * n
        self.task_wait = [0] * n
        self.task_start = [math.nan] * n
        self.task_end = [math.nan] * n
        self.task_ready = [math.nan] * n
        self.task_len = [0.0] * n
        self.task_prefetched = [False] * n
        self.submit_s = [t * self.opt.overheads.task_submit_s for t in range(n)]
        # wont_use hints fire when the handle's last writer (at hint time) ends.
        self.wont_after: dict[int, list[int]] = {}
        self.wont_at_submit: list[tuple[int, int]] = []
        last_writer: dict[int, int] = {}
        hints = sorted(td.wont_use())
        nhints = len(hints)
        # NOTE: only the writes up to the last hint matter; written handles come
        # from a per-mode-tuple mask (computed once) instead of a per-access test.
        write_mask = {ms: tuple([m & W for m in ms]) for ms in set(task_modes)}
        handles, modes = task_handles, task_modes
        k = 0
        for t in range(hints[-1][0] + 1 if hints else 0):
            for h in compress(handles[t], write_mask[modes[t]]):
                last_writer[h] = t
            while k < nhints and hints[k][0] == t:
                h = hints[k][1]
                lw = last_writer.get(h, -1)
                if lw >= 0:
                    self.wont_after.setdefault(lw, []).append((t, h))
                else:
                    self.wont_at_submit.append((t, h))
                k += 1

    def _setup_data(self) -> None:
        g, plat, opt = self.graph, self.platform, self.opt
        nh = self.tasks.n_data
        nn = plat.n_nodes
        self.nn = nn
        self.size = self.tasks.data_bytes.tolist()
        self.valid = [1] * nh  # bit per node; everything starts in RAM
        self.alloc = [1] * nh
        self.version = [0] * nh
        self.pin = [[0] * nh for _ in range(nn)]
        # tasks queued on a node that prefetched a handle there (StarPU's nb_tasks_prefetch)
        self.prefetched: list[dict[int, int]] = [{} for _ in range(nn)]
        self.pending: dict[int, Request] = {}
        self.mem: list[MemoryNode | None] = [None] * nn
        self.clean_lru: list = [None] * nn
        self.dirty_lru: list = [None] * nn
        for node in plat.gpu_nodes:
            cap = plat.capacity_bytes[node]
            if opt.gpu_memory_margin is not None and math.isfinite(cap):
                # StarPU 1.4 (driver_cuda.c): limit = totalGlobalMem / MiB * FREE_MARGIN, truncated to whole MiB
                cap = int(int(cap // _MIB) * opt.gpu_memory_margin) * _MIB
            m = MemoryNode(node, cap)
            self.mem[node] = m
            self.clean_lru[node] = m.lru
            from collections import OrderedDict

            self.dirty_lru[node] = OrderedDict()
        # a task's data must fit in every GPU that may run it
        gpu_caps = [self.mem[x].capacity_bytes for x in plat.gpu_nodes]
        if gpu_caps and any(w.kind == "cuda" for w in self.workers):
            # NOTE: a chain of C-level maps (no Python frame per task): for each
            # task, the bytes of its distinct handles.
            per_task = map(sum, map(partial(map, self.size.__getitem__), map(set, self.task_handles)))
            biggest = max(per_task, default=0)
            if biggest > min(gpu_caps):
                raise InputError(
                    f"a task needs {biggest} B of data but a GPU holds only {int(min(gpu_caps))} B",
                    key="--gpu-memory",
                    hint="Give the GPUs more memory or use smaller blocks",
                )
        # Request channels (StarPU: per handling node, peer node and direction),
        # channel id = (handler x nodes + peer) x 2 + (0 in, 1 out).
        nch = nn * nn * 2
        self.req_queues = [(deque(), deque(), deque()) for _ in range(nch)]
        self.inflight = [0] * nch
        self.channels_of = [[(node * nn + peer) * 2 + io for peer in range(nn) for io in (0, 1)] for node in range(nn)]
        self.alloc_wait: list[deque] = [deque() for _ in range(nn)]
        # A GPU driver blocked in a memory purge handles no request and starts no task.
        self.purging = [0] * nn
        self.pumping = [False] * (nn * nn * 2)
        self.oom_blocked = [False] * (nn * nn * 2)
        self.n_oom_blocked = [0] * nn  # blocked channels per handling node
        self.deferred: list[list[int]] = [[] for _ in range(nn)]
        self.hop_seq = 0
        self.sync_waiters: list[list] = []
        self.live_hops: dict[int, None] = {}
        self.malloc_free_at = 0.0
        self.pair_last: dict[tuple[int, int], Hop] = {}
        self.conflicts = self._stream_conflicts()
        self.hops_started = 0
        self.bytes_moved = [[0.0] * nn for _ in range(nn)]
        self.copies = [[0] * nn for _ in range(nn)]
        self.idle_writebacks = 0
        self.sync_writebacks = 0
        self.dropped_prefetches = 0
        self._cost_cache: dict[tuple[int, int, int], float] = {}
        # predicted hop times (StarPU's starpu_transfer_predict) per size, cached
        self._predict_cache: dict[tuple[int, int, int], float] = {}

    def _stream_conflicts(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        """For each ordered pair, the pairs whose pending transfers a new transfer must wait for.

        StarPU 1.4's simulated CUDA streams (``transfers_are_sequential``): same
        pair; crossed GPU<->GPU; a GPU->GPU transfer and any transfer into its
        source or destination.
        """
        nn = self.nn
        out = {}
        for s in range(nn):
            for d in range(nn):
                if s == d:
                    continue
                new_gg = s != RAM and d != RAM
                lst = []
                for s2 in range(nn):
                    for d2 in range(nn):
                        if s2 == d2:
                            continue
                        old_gg = s2 != RAM and d2 != RAM
                        seq = (s2 == s and d2 == d) or (new_gg and s == d2 and s2 == d)
                        seq = seq or (new_gg and (d2 == s or d2 == d))
                        seq = seq or (old_gg and (d == s2 or d == d2))
                        if seq:
                            lst.append((s2, d2))
                out[(s, d)] = lst
        return out

    # ------------------------------------------------------------------ run
    def run(self):
        """Simulate until every task has ended; returns a ``SimResult``."""
        from nodecast.runtime.outputs import SimResult

        env = self.env
        g = self.graph
        for t in range(self.n_tasks):
            if self.npending[t] == 0:
                heappush(env.queue, (self.submit_s[t], next(env.counter), self._push, t))
        for t, h in self.wont_at_submit:
            heappush(env.queue, (self.submit_s[t], next(env.counter), self._wont_use, h))
        env.run()
        if self.finished != self.n_tasks:
            stuck = [g.names[t] for t in range(self.n_tasks) if math.isnan(self.task_end[t])][:5]
            msg = f"simulation stalled with {self.n_tasks - self.finished} task(s) not run (e.g. {stuck})"
            raise RuntimeError(msg)
        return SimResult.from_simulation(self)

    # -------------------------------------------------------------- tasks
    def _push(self, t: int) -> None:
        self.task_ready[t] = self.env.now
        self.sched.push(t)

    def wake(self, w: Worker) -> None:
        """Let worker ``w`` look for work now (called by schedulers after a push)."""
        self._progress(w)

    def _progress(self, w: Worker) -> None:
        pop = self.sched.pop
        fetch = self._start_fetch
        if w.is_gpu:
            while w.fetching < 0 and not w.blocked and w.ondevice < w.pipeline:
                t = pop(w)
                if t < 0:
                    return
                fetch(w, t)
        else:
            while w.fetching < 0 and w.ondevice == 0:
                t = pop(w)
                if t < 0:
                    return
                fetch(w, t)

    def _start_fetch(self, w: Worker, t: int) -> None:
        w.fetching = t
        self.task_worker[t] = w.wid
        node = w.node
        if self.task_prefetched[t]:
            pf = self.prefetched[node]
            for h in self.task_reads[t]:
                n = pf.get(h, 0) - 1
                if n > 0:
                    pf[h] = n
                elif n == 0:
                    del pf[h]
        pin = self.pin[node]
        valid = self.valid
        alloc = self.alloc
        wait = self.task_wait
        # One sentinel count so that a request completing synchronously cannot
        # fire the task before all its requests are issued.
        wait[t] = 1
        for h, m in zip(self.task_handles[t], self.task_modes[t]):
            pin[h] += 1
            if m & R:
                if not valid[h] >> node & 1:
                    wait[t] += 1
                    self.request(h, node, FETCH, self._input_ready, t)
            elif not alloc[h] >> node & 1:
                wait[t] += 1
                self.request_alloc(h, node, self._input_ready, t)
        # NOTE: _input_ready(t) inlined (drop the sentinel count): one call less per task.
        wait[t] -= 1
        if wait[t] == 0:
            self._data_ready(t)

    def _input_ready(self, t: int) -> None:
        wait = self.task_wait
        wait[t] -= 1
        if wait[t] == 0:
            self._data_ready(t)

    def _data_ready(self, t: int) -> None:
        env = self.env
        now = env.now
        w = self.workers[self.task_worker[t]]
        node = w.node
        if self.purging[node]:
            self.deferred[node].append(t)
            return
        bit = 1 << node
        valid = self.valid
        version = self.version
        if node:
            clean = self.clean_lru[node]
            dirty = self.dirty_lru[node]
            for h, m in zip(self.task_handles[t], self.task_modes[t]):
                if m & W:
                    version[h] += 1
                    if valid[h] != bit:
                        self._set_valid(h, bit)
                    dirty.move_to_end(h)
                elif valid[h] == bit:
                    dirty.move_to_end(h)
                else:
                    clean.move_to_end(h)
        else:
            for h, m in zip(self.task_handles[t], self.task_modes[t]):
                if m & W:
                    version[h] += 1
                    if valid[h] != bit:
                        self._set_valid(h, bit)
        self.sched.on_exec_start(w, t)
        ty = self.task_type[t]
        sampler = self.type_samplers[ty][w.arch_index]
        dur = sampler() if sampler is not None else self.type_len[ty][w.arch_index]
        w.fetching = -1
        if w.is_gpu:
            if self.task_async[t]:
                start = now + self.gpu_queue_s
                if w.free_at > start:
                    start = w.free_at
            else:
                start = now if w.free_at < now else w.free_at
                w.blocked = True
        else:
            start = now
        end = start + dur
        w.free_at = end
        w.ondevice += 1
        self.task_start[t] = start
        self.task_len[t] = dur
        heappush(env.queue, (end, next(env.counter), self._exec_end, t))
        if w.is_gpu:
            self._progress(w)

    def _exec_end(self, t: int) -> None:
        env = self.env
        now = env.now
        w = self.workers[self.task_worker[t]]
        self.task_end[t] = now
        w.busy_s += self.task_len[t]
        w.ntasks += 1
        w.ondevice -= 1
        w.blocked = False
        self.finished += 1
        if now > self.makespan_s:
            self.makespan_s = now
        if self.tracing:
            self.trace_tasks.append((t, w.wid, self.task_start[t], now))
        node = w.node
        pin = self.pin[node]
        for h in self.task_handles[t]:
            pin[h] -= 1
        sched = self.sched
        sched.on_exec_end(w, t)
        prev = self.current_worker
        self.current_worker = w.wid
        npending = self.npending
        submit = self.submit_s
        for s in self.succs[t]:
            npending[s] -= 1
            if npending[s] == 0:
                if submit[s] > now:
                    heappush(env.queue, (submit[s], next(env.counter), self._push, s))
                else:
                    # NOTE: _push(s) inlined (the clock is ``now``): one call less per task.
                    self.task_ready[s] = now
                    sched.push(s)
        wont = self.wont_after.get(t)
        if wont is not None:
            for ht, h in wont:
                if submit[ht] > now:
                    heappush(env.queue, (submit[ht], next(env.counter), self._wont_use, h))
                else:
                    self._wont_use(h)
        self.current_worker = prev
        if node:
            if self.alloc_wait[node]:
                self._retry_alloc(node)
            self._unblock(node)
            dirty = len(self.dirty_lru[node])
            if (dirty + len(self.clean_lru[node])) * self.min_dirty_fraction < dirty:
                self._tidy(node)
        self._progress(w)
        if self._after_completion is not None:
            self._after_completion(w)

    # --------------------------------------------------------- coherence
    def _set_valid(self, h: int, new: int) -> None:
        """Change the valid-node mask of ``h``, keeping the per-GPU clean/dirty LRU split right."""
        old = self.valid[h]
        self.valid[h] = new
        changed = (old | new) & self.alloc[h] & ~1
        node = 1
        while changed >> node:
            if changed >> node & 1:
                b = 1 << node
                was = old == b
                now_dirty = new == b
                if was != now_dirty:
                    if now_dirty:
                        self.clean_lru[node].pop(h, None)
                        self.dirty_lru[node][h] = None
                    else:
                        self.dirty_lru[node].pop(h, None)
                        self.clean_lru[node][h] = None
            node += 1

    def _touch(self, node: int, h: int) -> None:
        if self.valid[h] == 1 << node:
            self.dirty_lru[node].move_to_end(h)
        else:
            self.clean_lru[node].move_to_end(h)

    def _wont_use(self, h: int) -> None:
        """StarPU's ``starpu_data_wont_use``: evict first, and write back to RAM when the bus is idle."""
        a = self.alloc[h]
        for node in self.platform.gpu_nodes:
            if a & (1 << node):
                if self.valid[h] == 1 << node:
                    self.dirty_lru[node].move_to_end(h, last=False)
                    if (h << 8 | RAM) not in self.pending:
                        self.request(h, RAM, IDLE, None, None, handler=node)
                else:
                    self.clean_lru[node].move_to_end(h, last=False)

    def _tidy(self, node: int) -> None:
        """Queue idle write-backs when fewer than 5 % of the node's chunks are clean (up to 10 %)."""
        dirty = self.dirty_lru[node]
        nchunks = len(dirty) + len(self.clean_lru[node])
        if not nchunks:
            return
        clean = nchunks - len(dirty)
        if clean >= self.opt.min_clean_fraction * nchunks:
            return
        target = self.opt.target_clean_fraction * nchunks
        ch = (node * self.nn + RAM) * 2 + 1
        planned = self.inflight[ch] + len(self.req_queues[ch][IDLE])
        pin = self.pin[node]
        pending = self.pending
        chosen = []
        for h in dirty:
            if clean + planned >= target:
                break
            if pin[h] or (h << 8 | RAM) in pending:
                continue
            chosen.append(h)
            planned += 1
        for h in chosen:
            self.request(h, RAM, IDLE, None, None, handler=node)

    # ----------------------------------------------------------- requests
    def request(self, h: int, dst: int, kind: int, cb, arg, *, handler: int | None = None) -> None:
        """Make ``h`` valid on ``dst``; ``cb(arg)`` runs when it is (prefetches may be dropped)."""
        key = h << 8 | dst
        req = self.pending.get(key)
        if req is not None:
            if cb is not None:
                req.waiters.append((cb, arg))
            if kind < req.kind:
                self._upgrade(req, kind)
            return
        nn = self.nn
        if dst == RAM:
            if handler is None:
                handler = self._any_valid_gpu(h)
            ch = (handler * nn + RAM) * 2 + 1
        else:
            handler = dst
            src = self.select_src(h, dst)
            ch = (dst * nn + (src if src >= 0 else RAM)) * 2
        req = Request(h, dst, kind, handler, ch)
        if cb is not None:
            req.waiters.append((cb, arg))
        self.pending[key] = req
        self.req_queues[ch][kind].append(req)
        self._pump(ch)

    def request_alloc(self, h: int, dst: int, cb, arg) -> None:
        """Allocate a chunk for ``h`` on ``dst`` without copying data (write-only access)."""
        key = h << 8 | dst
        req = self.pending.get(key)
        if req is not None:
            req.waiters.append((cb, arg))
            if req.kind != FETCH:
                self._upgrade(req, FETCH)
            return
        ch = (dst * self.nn + RAM) * 2
        req = Request(h, dst, FETCH, dst, ch)
        req.waiters.append((cb, arg))
        req.state = 1
        req.queued = False
        self.pending[key] = req
        self.inflight[ch] += 1
        self._allocate(req, alloc_only=True)

    def _any_valid_gpu(self, h: int) -> int:
        v = self.valid[h]
        node = 1
        while v >> node:
            if v >> node & 1:
                return node
            node += 1
        return RAM

    def _upgrade(self, req: Request, kind: int) -> None:
        old = req.kind
        req.kind = kind
        if req.queued:
            q = self.req_queues[req.ch]
            try:
                q[old].remove(req)
            except ValueError:
                pass
            q[kind].append(req)
            self._pump(req.ch)

    def _unblock(self, node: int) -> None:
        """Memory may have changed on ``node``: let its channels retry the prefetches that lacked room."""
        # NOTE: called after every task and request on a GPU; the per-node count
        # of blocked channels skips the channel scan when none is blocked.
        if not self.n_oom_blocked[node]:
            return
        blocked = self.oom_blocked
        for ch in self.channels_of[node]:
            if blocked[ch]:
                blocked[ch] = False
                self.n_oom_blocked[node] -= 1
                self._pump(ch)

    def _pump_node(self, node: int) -> None:
        for ch in self.channels_of[node]:
            if self.req_queues[ch][0] or self.req_queues[ch][1] or self.req_queues[ch][2]:
                self._pump(ch)

    def _pump(self, ch: int) -> None:
        """Dispatch the queued requests of channel ``ch`` within StarPU's in-flight limits.

        Fetches while fewer than 20 requests of the channel are in flight,
        prefetches (once no fetch waits) while fewer than 10, idle requests only
        when none is.
        """
        handler = ch // 2 // self.nn
        if self.purging[handler] or self.pumping[ch]:
            return  # blocked in a purge, or an outer _pump of this channel is looping already
        self.pumping[ch] = True
        try:
            fq, pq, iq = self.req_queues[ch]
            inflight = self.inflight
            opt = self.opt
            while not self.purging[handler]:
                n = inflight[ch]
                if fq and n < opt.max_requests:
                    req = fq.popleft()
                elif self.oom_blocked[ch]:
                    return
                elif not fq and pq and n < opt.max_prefetch_requests:
                    req = pq.popleft()
                elif not fq and not pq and iq and n < opt.max_idle_requests:
                    req = iq.popleft()
                else:
                    return
                req.queued = False
                if req.state != 0:
                    continue
                req.state = 1
                inflight[ch] = n + 1
                self._allocate(req)
        finally:
            self.pumping[ch] = False

    # --------------------------------------------------------- allocation
    # Protocol: every path out of _allocate that succeeds calls _after_alloc
    # with the request's replica pinned once on its node (so that nobody can
    # evict the chunk while the copy is staged or in flight); _after_alloc
    # releases that pin when the request finishes.
    def _allocate(self, req: Request, alloc_only: bool = False) -> None:
        h, dst = req.h, req.dst
        pin = self.pin[dst]
        if dst == RAM or self.alloc[h] >> dst & 1 or self.valid[h] >> dst & 1:
            pin[h] += 1
            self._after_alloc(req, alloc_only)
            return
        m = self.mem[dst]
        size = self.size[h]
        if m.take_cached(size):
            self._grant(h, dst)
            pin[h] += 1
            self._after_alloc(req, alloc_only)
            return
        delay = 0.0
        ovh = self.opt.overheads
        if not m.fits(size) and m.cache:
            delay += m.free_cached(size) * ovh.cuda_free_s
        if m.fits(size):
            m.add_chunk(size)
            self._grant(h, dst)
            pin[h] += 1
            # cudaFree/cudaMalloc under StarPU's global allocation lock
            delay += ovh.cuda_malloc_s
            now = self.env.now
            end = (now if now > self.malloc_free_at else self.malloc_free_at) + delay
            self.malloc_free_at = end
            if end > now:
                heappush(self.env.queue, (end, next(self.env.counter), self._after_alloc_ev, (req, alloc_only)))
            else:
                self._after_alloc(req, alloc_only)
            return
        m.full_events += 1
        if req.kind == IDLE:
            self._drop(req)  # StarPU never evicts for an idle request
            return
        victim, other_sizes = self._find_clean_victim(dst, size, req.kind == FETCH)
        if victim >= 0:
            # try_to_reuse_potentially_in_use_mc: take over a clean chunk, no cost
            self._evict(dst, victim, free_chunk=False)
            self._grant(h, dst)
            pin[h] += 1
            self._after_alloc(req, alloc_only)
            return
        self._purge(req, alloc_only, other_sizes)

    def _find_clean_victim(self, node: int, size: int, demand: bool) -> tuple[int, bool]:
        """First chunk of ``size`` bytes, least recently used first, that can be dropped without a write-back.

        Also says whether some droppable clean chunk of another size was seen.
        """
        pin = self.pin[node]
        pf = self.prefetched[node]
        pending = self.pending
        sizes = self.size
        other = False
        for h in self.clean_lru[node]:
            if pin[h] or (not demand and h in pf) or (h << 8 | node) in pending:
                continue
            if sizes[h] == size:
                return h, other
            other = True
        return -1, other

    def _purge(self, req: Request, alloc_only: bool, scan_clean: bool = True) -> None:
        """StarPU's memory reclaim: free 2 x size bytes (writing dirty chunks back first), then cudaMalloc.

        Each freed chunk costs ``cuda_free_s`` and the allocation ``cuda_malloc_s``,
        under the global allocation lock.
        """
        dst = req.dst
        m = self.mem[dst]
        size = self.size[req.h]
        demand = req.kind == FETCH
        pin = self.pin[dst]
        pf = self.prefetched[dst]
        pending = self.pending
        victims: list[tuple[int, bool]] = []
        freed = 0
        need = 2 * size
        sizes = self.size
        lists = ((self.clean_lru[dst], False), (self.dirty_lru[dst], True)) if scan_clean else ((self.dirty_lru[dst], True),)
        for lru, dirty in lists:
            if freed >= need:
                break
            for h in lru:
                if pin[h] or (not demand and h in pf) or (h << 8 | dst) in pending or (h << 8 | RAM) in pending:
                    continue
                victims.append((h, dirty))
                freed += sizes[h]
                if freed >= need:
                    break
        if not victims:
            if demand:
                self.alloc_wait[dst].append((req, alloc_only))
            else:
                self._drop(req)
            return
        m.purges += 1
        self.purging[dst] += 1
        state = [len(victims), req, alloc_only]
        for h, dirty in victims:
            pin[h] += 1
        for h, dirty in victims:
            if dirty:
                m.write_backs += 1
                self.sync_writebacks += 1
                self._hop(h, dst, RAM, self._purge_step, (state, h))
            else:
                self._purge_step((state, h))

    def _purge_step(self, arg) -> None:
        state, v = arg
        req = state[1]
        dst = req.dst
        pin = self.pin[dst]
        pin[v] -= 1
        if self.alloc[v] >> dst & 1 and not pin[v] and self.valid[v] != 1 << dst:
            self._evict(dst, v, free_chunk=True)
            self.mem[dst].frees += 1
            state.append(v)
        state[0] -= 1
        if state[0]:
            return
        # Each cudaFree synchronises every GPU (waits for all transfers in
        # flight), then takes cuda_free_s under the global allocation lock.
        self._purge_free((req, state[2], len(state) - 3))

    def _sync_transfers(self, cb, arg) -> None:
        """Call ``cb(arg)`` once every transfer started so far has ended (StarPU's simulated cudaFree sync)."""
        limit = self.hop_seq
        live = sum(1 for seq in self.live_hops if seq < limit)
        if not live:
            cb(arg)
        else:
            self.sync_waiters.append([live, limit, cb, arg])

    def _purge_free(self, arg) -> None:
        req, alloc_only, nfree = arg
        if nfree == 0:
            self._purge_done((req, alloc_only))
        else:
            self._sync_transfers(self._purge_free_one, (req, alloc_only, nfree))

    def _purge_free_one(self, arg) -> None:
        req, alloc_only, nfree = arg
        now = self.env.now
        end = (now if now > self.malloc_free_at else self.malloc_free_at) + self.opt.overheads.cuda_free_s
        self.malloc_free_at = end
        heappush(self.env.queue, (end, next(self.env.counter), self._purge_free, (req, alloc_only, nfree - 1)))

    def _purge_done(self, arg) -> None:
        req, alloc_only = arg
        dst = req.dst
        self.purging[dst] -= 1
        self._allocate(req, alloc_only)  # now there is room for a cudaMalloc (unless taken meanwhile)
        if not self.purging[dst]:
            deferred = self.deferred[dst]
            self.deferred[dst] = []
            for t in deferred:
                self._data_ready(t)
            self._pump_node(dst)

    def _evict(self, node: int, h: int, free_chunk: bool) -> None:
        """Drop ``h``'s replica on ``node``; its chunk is freed or handed over to the caller."""
        b = 1 << node
        if free_chunk:
            self.mem[node].used_bytes -= self.size[h]
        if self.valid[h] & b:
            self.mem[node].evictions += 1
            self._set_valid(h, self.valid[h] & ~b)
            if self.opt.trace:
                self.trace_evictions.append((self.env.now, node, h, True))
        self.clean_lru[node].pop(h, None)
        self.dirty_lru[node].pop(h, None)
        self.alloc[h] &= ~b

    def _grant(self, h: int, node: int) -> None:
        self.alloc[h] |= 1 << node
        if self.valid[h] == 1 << node:
            self.dirty_lru[node][h] = None
        else:
            self.clean_lru[node][h] = None

    def _retry_alloc(self, node: int) -> None:
        waiting = self.alloc_wait[node]
        self.alloc_wait[node] = deque()
        while waiting:
            req, alloc_only = waiting.popleft()
            self._allocate(req, alloc_only)

    def _after_alloc_ev(self, arg) -> None:
        self._after_alloc(*arg)

    def _after_alloc(self, req: Request, alloc_only: bool) -> None:
        h, dst = req.h, req.dst
        if alloc_only or self.valid[h] >> dst & 1:
            self.pin[dst][h] -= 1
            self._finish(req)
            return
        src = self.select_src(h, dst)
        if src < 0:
            # Only GPUs without a peer path hold it: stage through RAM first.
            self.request(h, RAM, min(req.kind, PREFETCH), self._after_alloc_staged, req, handler=self._any_valid_gpu(h))
            return
        self._hop(h, src, dst, self._copy_done, req)

    def _after_alloc_staged(self, req: Request) -> None:
        self._after_alloc(req, False)

    def _copy_done(self, req: Request) -> None:
        self.pin[req.dst][req.h] -= 1
        self._finish(req)

    def _finish(self, req: Request) -> None:
        key = req.h << 8 | req.dst
        if self.pending.get(key) is req:
            del self.pending[key]
        req.state = 2
        self.inflight[req.ch] -= 1
        for cb, arg in req.waiters:
            cb(arg)
        self._pump(req.ch)
        if req.dst != RAM:
            if self.alloc_wait[req.dst]:
                self._retry_alloc(req.dst)
            self._unblock(req.dst)

    def _drop(self, req: Request) -> None:
        """A prefetch or idle request that found no room: put it back and retry it later.

        StarPU keeps a request that failed with ENOMEM at the head of its list
        and stops pushing prefetches on that channel; they are tried again
        when the driver progresses (here: when a task ends on the node or a
        request into it finishes).
        """
        req.state = 0
        req.queued = True
        self.inflight[req.ch] -= 1
        self.dropped_prefetches += 1
        self.req_queues[req.ch][req.kind].appendleft(req)
        if not self.oom_blocked[req.ch]:
            self.oom_blocked[req.ch] = True
            self.n_oom_blocked[req.ch // 2 // self.nn] += 1

    def select_src(self, h: int, dst: int) -> int:
        """StarPU's ``_starpu_select_src_node``: the valid copy with the lowest predicted direct transfer time.

        Returns -1 when every valid copy is on a GPU that cannot copy directly to ``dst``.
        """
        v = self.valid[h]
        if v & 1:
            best, best_cost = RAM, self.predict(RAM, dst, self.size[h])
        else:
            best, best_cost = -1, math.inf
        plat = self.platform
        node = 1
        while v >> node:
            if v >> node & 1 and node != dst:
                if dst == RAM or plat.peer[node][dst]:
                    c = self.predict(node, dst, self.size[h])
                    if c < best_cost:
                        best, best_cost = node, c
            node += 1
        return best

    def predict(self, src: int, dst: int, size: int) -> float:
        key = (src, dst, size)
        c = self._predict_cache.get(key)
        if c is None:
            c = self._predict_cache[key] = self.platform.predict_transfer_s(src, dst, size)
        return c

    def expected_transfer_s(self, h: int, node: int) -> float:
        """StarPU's ``starpu_data_expected_transfer_time``: 0 when valid or requested on ``node``."""
        v = self.valid[h]
        if v >> node & 1 or (h << 8 | node) in self.pending:
            return 0.0
        size = self.size[h]
        key = (v, node, size)
        c = self._cost_cache.get(key)
        if c is None:
            src = self.select_src(h, node)
            if src >= 0:
                c = self.predict(src, node, size)
            else:
                g = self._any_valid_gpu(h)
                c = self.predict(g, RAM, size) + self.predict(RAM, node, size)
            self._cost_cache[key] = c
        return c

    def prefetch_task(self, t: int, w: Worker) -> None:
        """StarPU's ``starpu_prefetch_task_input_for``: prefetch the task's read data to the worker's node."""
        node = w.node
        bit = 1 << node
        valid = self.valid
        g = self.graph
        pf = self.prefetched[node]
        pending = self.pending
        for h in self.task_reads[t]:
            pf[h] = pf.get(h, 0) + 1
            if not valid[h] & bit and (h << 8 | node) not in pending:
                self.request(h, node, PREFETCH, None, None)
        self.task_prefetched[t] = True

    # ------------------------------------------------------------ transfers
    def _hop(self, h: int, src: int, dst: int, cont, arg) -> None:
        """Copy ``h`` from ``src`` to ``dst``: queue cost, stream rules, then the fluid network."""
        env = self.env
        hop = Hop(h, src, dst, self.size[h], self.version[h], cont, arg, env.now)
        hop.seq = self.hop_seq
        self.hop_seq += 1
        self.live_hops[hop.seq] = None
        self.pin[src][h] += 1
        q = self.opt.overheads.transfer_queue_s
        if q > 0:
            heappush(env.queue, (env.now + q, next(env.counter), self._hop_submit, hop))
        else:
            self._hop_submit(hop)

    def _hop_submit(self, hop: Hop) -> None:
        pair_last = self.pair_last
        for p in self.conflicts[(hop.src, hop.dst)]:
            last = pair_last.get(p)
            if last is not None and not last.done:
                last.wake.append(hop)
                hop.nwait += 1
        pair_last[(hop.src, hop.dst)] = hop
        if hop.nwait == 0:
            self._hop_start(hop)

    def _hop_start(self, hop: Hop) -> None:
        plat = self.platform
        hop.t_start = self.env.now
        self.hops_started += 1
        links = plat.route_links[hop.src][hop.dst]
        hop.flow = self.net.transfer(links, hop.size, plat.route_latency_s[hop.src][hop.dst], self._hop_done, hop)

    def _hop_done(self, hop: Hop) -> None:
        hop.done = True
        src, dst, h = hop.src, hop.dst, hop.h
        del self.live_hops[hop.seq]
        if self.sync_waiters:
            ready = []
            for waiter in self.sync_waiters:
                if hop.seq < waiter[1]:
                    waiter[0] -= 1
                    if waiter[0] == 0:
                        ready.append(waiter)
            for waiter in ready:
                self.sync_waiters.remove(waiter)
                waiter[2](waiter[3])
        if self.pair_last.get((src, dst)) is hop:
            del self.pair_last[(src, dst)]
        self.pin[src][h] -= 1
        self.bytes_moved[src][dst] += hop.size
        self.copies[src][dst] += 1
        if self.opt.trace:
            self.trace_hops.append((h, src, dst, hop.size, hop.t_start, self.env.now))
        if hop.version == self.version[h] and self.valid[h] & (1 << src):
            if not self.valid[h] >> dst & 1:
                self._set_valid(h, self.valid[h] | (1 << dst))
            if dst != RAM:
                if not self.alloc[h] >> dst & 1:
                    self._grant(h, dst)
                self._touch(dst, h)
        for nxt in hop.wake:
            nxt.nwait -= 1
            if nxt.nwait == 0:
                self._hop_start(nxt)
        hop.cont(hop.arg)
        if src != RAM and self.alloc_wait[src]:
            self._retry_alloc(src)
