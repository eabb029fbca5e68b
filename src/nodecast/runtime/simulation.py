"""A StarPU-like task runtime on the discrete-event engine (Stanisic et al., sections 3-7): ``Simulation``.

What is modelled, and where it comes from (each concern has its module, and
``Simulation`` puts them together over one shared state):

Submission (section 3)
    The application thread submits tasks in order, one every
    ``Overheads.task_submit_s`` (StarPU 1.4's simulated submission cost, 1 µs).
    A task whose dependencies are done when it is submitted is pushed to the
    scheduler at its submission time; otherwise when its last predecessor ends.
Workers (section 4): ``nodecast.runtime.workers``, ``nodecast.runtime.execution``
    One worker per GPU (with its driver), and optionally per remaining CPU
    core; a GPU keeps up to ``pipeline`` kernels queued on its device.
Scheduling: ``nodecast.runtime.schedulers``
    One policy per file; a policy sees the runtime through a
    ``SchedulerView``, built here.
Data (section 5): ``nodecast.runtime.coherence``, ``nodecast.runtime.allocation``, ``nodecast.runtime.memory``
    MSI-like coherence per data handle and memory node; bounded GPU memory
    with chunk reuse, eviction and StarPU's purge.
Requests and transfers (section 6): ``nodecast.runtime.requests``, ``nodecast.runtime.transfers``
    Requests queue per channel within StarPU's in-flight limits; a transfer
    obeys StarPU's stream rules, then flows through the fluid network.
    GPU->GPU copies go peer-to-peer where allowed, else through RAM.
Computation (section 7)
    Kernel durations come from ``KernelModels`` (mean, or sampled).
Options and overheads: ``nodecast.runtime.options``

The result is a ``SimResult`` (``nodecast.runtime.outputs``).
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import asdict
from functools import partial
from heapq import heappush
from itertools import compress

import numpy as np

from nodecast.engine.events import Environment
from nodecast.engine.network import FluidNetwork
from nodecast.engine.platform import Platform
from nodecast.errors import InputError
from nodecast.graph.opgraph import OpGraph
from nodecast.graph.taskgraph import R, W, TaskGraph, task_data, total_flops
from nodecast.models.history import KernelModels
from nodecast.runtime.allocation import Allocation
from nodecast.runtime.coherence import Coherence
from nodecast.runtime.execution import TaskExecution
from nodecast.runtime.memory import MemoryNode
from nodecast.runtime.options import RuntimeOptions
from nodecast.runtime.outputs import LinkStats, NodeStats, SimResult, WorkerStats
from nodecast.runtime.requests import Request, Requests
from nodecast.runtime.schedulers import Scheduler, SchedulerView, make_scheduler
from nodecast.runtime.transfers import Hop, Transfers, stream_conflicts
from nodecast.runtime.workers import make_workers

_MIB = 1 << 20


class Simulation(TaskExecution, Coherence, Requests, Allocation, Transfers):
    """One simulated execution of the task graph ``graph`` (an OpGraph; a ``TaskGraph`` builder is built) on ``platform``.

    Raises InputError at construction for a kernel without a model, a task whose
    data cannot fit in a GPU's memory, or an unknown scheduler; ValueError for
    a graph without tasks' data accesses (a traced program's graph) or with a
    task already placed on a device (the scheduler places every task).
    """

    def __init__(self, graph: OpGraph | TaskGraph, platform: Platform, models: KernelModels, options: RuntimeOptions | None = None) -> None:
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
        self.workers, self.arches = make_workers(platform, self.opt)
        self.sync_gpu = self.opt.pipeline == 0
        self._setup_tasks()
        self._setup_data()
        self.view = self._scheduler_view()
        self.sched = make_scheduler(self.opt.scheduler, self.view)
        # NOTE: most policies keep the base class's no-op hook; skip the call per task then.
        hook = type(self.sched).after_completion
        self._after_completion = None if hook is Scheduler.after_completion else self.sched.after_completion
        self.makespan_s = 0.0
        self.finished = 0
        self.trace_tasks: list[tuple[int, int, float, float]] = []
        self.trace_hops: list[tuple[int, int, int, int, float, float]] = []
        self.trace_evictions: list[tuple[float, int, int, bool]] = []

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
        plat, opt = self.platform, self.opt
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
        self.conflicts = stream_conflicts(nn)
        self.hops_started = 0
        self.bytes_moved = [[0.0] * nn for _ in range(nn)]
        self.copies = [[0] * nn for _ in range(nn)]
        self.idle_writebacks = 0
        self.sync_writebacks = 0
        self.dropped_prefetches = 0
        self._cost_cache: dict[tuple[int, int, int], float] = {}
        # predicted hop times (StarPU's starpu_transfer_predict) per size, cached
        self._predict_cache: dict[tuple[int, int, int], float] = {}

    def _scheduler_view(self) -> SchedulerView:
        """The part of this runtime a scheduling policy sees (live: the same lists and dicts, read as they change)."""
        return SchedulerView(
            workers=self.workers, options=self.opt, platform=self.platform, clock=self.env, n_tasks=self.n_tasks,
            task_type=self.task_type, type_len=self.type_len, task_priority=self.task_priority,
            task_handles=self.task_handles, task_reads=self.task_reads, successors=self.succs, valid=self.valid,
            requested=self.pending, data_bytes=self.size, transfer_estimates=self._cost_cache, wake=self.wake,
            prefetch=self.prefetch_task, select_src=self.select_src, expected_transfer_s=self.expected_transfer_s,
        )

    # ------------------------------------------------------------------ run
    def run(self) -> SimResult:
        """Simulate until every task has ended; returns a ``SimResult``."""
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
        return self.result()

    def result(self) -> SimResult:
        """What the run produced, as a ``SimResult`` (summary, tables, schedule when traced, headline)."""
        plat = self.platform
        span = self.makespan_s
        workers = [WorkerStats(w.name, w.kind, w.ntasks, w.busy_s, max(0.0, span - w.busy_s)) for w in self.workers]
        net = self.net
        links = [
            LinkStats(name, bw, b, busy)
            for name, bw, b, busy in zip(plat.link_names, plat.link_bandwidth_bps, net.link_bytes, net.link_busy_s, strict=True)
        ]
        nodes = []
        for g in plat.gpu_nodes:
            m = self.mem[g]
            nodes.append(
                NodeStats(
                    plat.node_names[g],
                    m.capacity_bytes,
                    m.peak_bytes,
                    m.mallocs,
                    m.evictions,
                    m.write_backs,
                    m.reuses,
                    m.full_events,
                    m.purges,
                )
            )
        transfers: dict[str, dict[str, float]] = {}
        for s in range(plat.n_nodes):
            for d in range(plat.n_nodes):
                if self.copies[s][d]:
                    transfers[f"{plat.node_names[s]}->{plat.node_names[d]}"] = {
                        "copies": self.copies[s][d],
                        "bytes": self.bytes_moved[s][d],
                    }
        opt = self.opt
        options = {
            "scheduler": opt.scheduler,
            "workers": opt.workers,
            "pipeline": opt.pipeline,
            "prefetch": opt.prefetch,
            "sharing": opt.sharing,
            "seed": opt.seed,
            "kernel_times": self.models.mode,
            "overheads": asdict(opt.overheads),
        }
        trace = None
        if opt.trace:
            names, kernels, kernel, data_names = self.graph.names, self.tasks.kernels, self.task_kernel, self.tasks.data_names
            trace = {
                "tasks": [
                    {"task": names[t], "kernel": kernels[kernel[t]], "worker": self.workers[w].name, "start_s": a, "end_s": b}
                    for t, w, a, b in self.trace_tasks
                ],
                "transfers": [
                    {
                        "data": data_names[h],
                        "src": plat.node_names[s],
                        "dst": plat.node_names[d],
                        "bytes": size,
                        "start_s": a,
                        "end_s": b,
                    }
                    for h, s, d, size, a, b in self.trace_hops
                ],
                "evictions": [{"time_s": t, "node": plat.node_names[n], "data": data_names[h]} for t, n, h, _ in self.trace_evictions],
            }
        models = self.models
        inputs = {
            "platform_source": plat.source,
            "kernel_models": str(models.folder / f"*.{models.machine}") if models.folder is not None else "none (times given)",
            "gpu_models": list(plat.gpu_models),
            "cpus": plat.n_cpus,
            "link_latency_s": list(plat.link_latency_s),
        }
        notes = list(dict.fromkeys(self.notes))
        if self.dropped_prefetches:
            notes.append(f"{self.dropped_prefetches} prefetch attempt(s) postponed for lack of GPU memory")
        return SimResult(
            app=self.tasks.name,
            platform=plat.name,
            scheduler=opt.scheduler,
            n_tasks=self.n_tasks,
            makespan_s=span,
            total_flops=total_flops(self.graph),
            workers=workers,
            links=links,
            nodes=nodes,
            transfers=transfers,
            events=self.env.processed,
            notes=notes,
            options=options,
            trace=trace,
            inputs=inputs,
        )
