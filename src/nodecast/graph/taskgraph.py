"""Task graphs: tasks that access data handles, with StarPU's implicit dependencies.

A task graph is built the way a StarPU application submits work
(Stanisic et al., section 3): tasks are added in *submission order*, each
naming the data handles it accesses and how (``R``, ``W``, ``RW``).
Dependencies follow sequential consistency of data accesses, as in StarPU's
implicit dependencies: a task that reads a handle waits for the handle's last
writer; a task that writes it waits for every reader since the last writer
(or for the last writer when there was no reader). Extra explicit
dependencies may be added by name; they are the only way to make a cycle,
which is an error.

Data that a task reads before any task wrote it is *initial data*: it starts
valid in host memory (node 0), like a matrix registered from RAM in StarPU.

``TaskGraph`` is the builder (plain lists, appended to tens of thousands of
times per graph); ``TaskGraph.build()`` returns the graph as an
``nodecast.graph.OpGraph``, the one columnar type nodecast uses for traced
programs and task graphs alike: one KERNEL op per task with ``device`` -1
(open placement: the simulator's scheduler decides), DATA and TASK_DEP
edges, the task columns (kernel, priority, footprint, async, model size) and
a ``TaskData`` with the data accesses, sizes, successor lists and eviction
hints (``nodecast.graph.opgraph``). ``cholesky``, ``lu`` and ``load_dag``
return OpGraphs; ``nodecast.runtime.Simulation`` runs one.

DAG file format (JSON, ``format: "nodecast-dag"``, ``version: 1``)::

    {
      "format": "nodecast-dag", "version": 1,
      "name": "my-app",
      "data": [ {"name": "A", "size_bytes": 3686400}, ... ],
      "tasks": [
        {"name": "t0", "kernel": "chol_model_potrf",
         "access": [["A", "RW"]],            # handle name, mode R | W | RW
         "flops": 2.95e8,                   # optional, default 0
         "priority": 5,                     # optional, default 0 (higher runs first)
         "footprint": "617e5fe6",           # optional StarPU footprint hash (hex)
         "size_bytes": 3686400,             # optional, default: sum of accessed data
         "async": true,                     # optional: GPU kernel may be queued (default true)
         "deps": ["other task", ...]},      # optional explicit dependencies
        ...
      ],
      "wont_use": [ {"after": "t3", "data": "A"} ]   # optional StarPU eviction hints
    }

Tasks are submitted in file order. ``kernel`` names the StarPU performance
model symbol (``<kernel>.<machine>`` in the codelets folder). ``size_bytes``
(or ``footprint``) selects the model's entry. ``to_json`` writes a graph in
this format, explicit dependencies included.
"""

from __future__ import annotations

import gc
import itertools
import json
import sys
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nodecast.decoding import decoder_limits
from nodecast.errors import InputError
from nodecast.graph.opgraph import OP_COLUMNS, TASK_COLUMNS, Anchor, EdgeKind, OpGraph, OpKind, TaskData
from nodecast.inputs import read_input
from nodecast.values import as_float, as_int, json_kind

R, W, RW = 1, 2, 3
MODES = {"R": R, "W": W, "RW": RW, "STARPU_R": R, "STARPU_W": W, "STARPU_RW": RW, "READ": R, "WRITE": W}
MODE_NAMES = {R: "R", W: "W", RW: "RW"}
#: largest data handle (bytes): 1 PiB, beyond any node's memory
MAX_DATA_BYTES = 1 << 50
#: ``OpGraph.format`` of task graphs
TASK_GRAPH_FORMAT = "task-graph"


@contextmanager
def paused_gc():
    """Pause Python's cyclic garbage collector while a task graph is built (usable as a decorator).

    A graph is hundreds of thousands of small lists and tuples that live as
    long as the graph and hold no reference cycles; each collection the
    allocations trigger walks all of them again, which costs a third of
    the build time of Cholesky 72,000. The collector's previous state is
    restored on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class TaskGraph:
    """Builder of a task graph: tasks in submission order, the data they access, their dependencies.

    Per-task lists (index = task id): ``kernel`` (index into ``kernels``),
    ``handles`` and ``modes`` (tuples), ``flops``, ``priority``, ``size_bytes``
    (the model footprint size), ``footprint`` (hash or None), ``async_ok``,
    ``preds`` (task ids: implicit dependencies, then explicit ones in
    declaration order), ``succs`` (in declaration order), ``names``.
    Per-handle lists: ``data_names``, ``data_bytes``. ``wont_use`` holds ``(task, handle)``: after ``task`` was
    submitted, StarPU's ``starpu_data_wont_use(handle)`` was called.
    ``build()`` returns the graph as an OpGraph (see the module docstring).
    """

    name: str = "dag"
    kernels: list[str] = field(default_factory=list)
    data_names: list[str] = field(default_factory=list)
    data_bytes: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    kernel: list[int] = field(default_factory=list)
    handles: list[tuple[int, ...]] = field(default_factory=list)
    modes: list[tuple[int, ...]] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)
    priority: list[int] = field(default_factory=list)
    size_bytes: list[int] = field(default_factory=list)
    footprint: list[int | None] = field(default_factory=list)
    async_ok: list[bool] = field(default_factory=list)
    preds: list[list[int]] = field(default_factory=list)
    succs: list[list[int]] = field(default_factory=list)
    wont_use: list[tuple[int, int]] = field(default_factory=list)
    nominal_flops: float | None = None
    notes: list[str] = field(default_factory=list)
    _kernel_index: dict[str, int] = field(default_factory=dict, repr=False)
    _data_index: dict[str, int] = field(default_factory=dict, repr=False)
    _last_writer: list[int] = field(default_factory=list, repr=False)
    _readers: list[list[int]] = field(default_factory=list, repr=False)
    # explicit dependencies (task, dep) in declaration order: the order a runtime releases successors in
    _explicit: list[tuple[int, int]] = field(default_factory=list, repr=False)
    _flat_handles: list[int] = field(default_factory=list, repr=False)
    _flat_modes: list[int] = field(default_factory=list, repr=False)
    _flat_preds: list[int] = field(default_factory=list, repr=False)  # implicit dependencies, task by task

    @property
    def n_tasks(self) -> int:
        return len(self.kernel)

    def add_data(self, name: str, size_bytes: int) -> int:
        """Declare a data handle; returns its id. Raises InputError on a duplicate name or a bad size."""
        if name in self._data_index:
            raise InputError(f"data {name!r} is declared twice", key="data")
        if not isinstance(size_bytes, int) or isinstance(size_bytes, bool) or not 0 <= size_bytes <= MAX_DATA_BYTES:
            raise InputError(f"data {name!r}: size_bytes must be an integer from 0 to 2^50 (got {size_bytes!r})", key="data")
        hid = len(self.data_names)
        self._data_index[name] = hid
        self.data_names.append(name)
        self.data_bytes.append(size_bytes)
        self._last_writer.append(-1)
        self._readers.append([])
        return hid

    def data_id(self, name: str) -> int:
        """Id of the handle called ``name``. Raises InputError when it was never declared."""
        try:
            return self._data_index[name]
        except KeyError:
            raise InputError(f"unknown data {name!r}", key="data", hint="Declare it in the data list") from None

    def add_task(
        self,
        kernel: str,
        access: list[tuple[int, int]],
        *,
        flops: float = 0.0,
        priority: int = 0,
        name: str | None = None,
        footprint: int | None = None,
        size_bytes: int | None = None,
        async_ok: bool = True,
        extra_deps: list[int] = (),
    ) -> int:
        """Submit a task that accesses ``access`` = [(handle id, mode)]; returns its id.

        Dependencies on earlier tasks are derived by sequential consistency;
        ``extra_deps`` are explicit dependencies on earlier tasks (as
        ``link_forward``); ValueError for one that names no earlier task.
        """
        if extra_deps and any(not 0 <= d < len(self.kernel) for d in extra_deps):
            msg = f"extra_deps must name earlier tasks (got {list(extra_deps)}); use link_forward for later ones"
            raise ValueError(msg)
        tid = len(self.kernel)
        k = self._kernel_index.get(kernel)
        if k is None:
            k = self._kernel_index[kernel] = len(self.kernels)
            self.kernels.append(kernel)
        last_writer = self._last_writer
        readers_of = self._readers
        data_bytes = self.data_bytes
        preds: list[int] = []
        total = 0
        # NOTE: apps submit tens of thousands of tasks; local bindings and one
        # pass over ``access`` keep graph construction off the benchmark's clock.
        for hid, mode in access:
            total += data_bytes[hid]
            if mode & W:
                readers = readers_of[hid]
                if readers:
                    preds += readers
                    readers_of[hid] = []
                else:
                    last = last_writer[hid]
                    if last >= 0:
                        preds.append(last)
                last_writer[hid] = tid
            else:
                last = last_writer[hid]
                if last >= 0:
                    preds.append(last)
                readers_of[hid].append(tid)
        # NOTE: a set answers "all distinct?" cheaper than rebuilding the list; the list is
        # only rebuilt (same result) when it has a duplicate or ``tid`` (a task that names a
        # handle twice, written first, reads its own write).
        if (len(preds) > 1 or tid in preds) and (tid in preds or len(set(preds)) != len(preds)):
            preds = [d for d in dict.fromkeys(preds) if d != tid]
        self.names.append(name if name is not None else f"{kernel}#{tid}")
        self.kernel.append(k)
        if access:
            hs, ms = zip(*access)  # NOTE: transposes in C, straight to tuples
        else:
            hs = ms = ()
        self.handles.append(hs)
        self.modes.append(ms)
        # NOTE: flat copies for build(): one C-level extend here is cheaper than flattening later.
        self._flat_handles.extend(hs)
        self._flat_modes.extend(ms)
        self._flat_preds.extend(preds)
        self.flops.append(float(flops))
        self.priority.append(int(priority))
        self.size_bytes.append(size_bytes if size_bytes is not None else total)
        self.footprint.append(footprint)
        self.async_ok.append(bool(async_ok))
        self.preds.append(preds)
        self.succs.append([])
        succs = self.succs
        for d in preds:
            succs[d].append(tid)
        if extra_deps:
            for d in extra_deps:
                self.link_forward(tid, d)
        return tid

    def add_wont_use(self, handle: int) -> None:
        """Record ``starpu_data_wont_use(handle)`` right after the last submitted task."""
        self.wont_use.append((len(self.kernel) - 1, handle))

    def link_forward(self, task: int, dep: int) -> None:
        """Add an explicit dependency of ``task`` on ``dep`` (possibly a later task; on itself: a cycle ``build`` refuses)."""
        if dep not in self.preds[task]:
            self.preds[task].append(dep)
            self.succs[dep].append(task)
            self._explicit.append((task, dep))

    def build(self, path: str | Path | None = None) -> OpGraph:
        """The graph as an OpGraph (see the module docstring). Build as often as needed; add nothing afterwards.

        Raises InputError naming tasks on a cycle (``path``: the file the
        graph came from, for the message).
        """
        n = self.n_tasks
        chain = itertools.chain.from_iterable
        indptr = _offsets(self.preds, n)
        m = int(indptr[-1])
        if self._explicit:
            src = np.fromiter(chain(self.preds), np.int32, count=m)
        else:
            src = np.array(self._flat_preds, np.int32)
        kind = np.full(m, EdgeKind.DATA, np.int8)
        if self._explicit:
            # explicit dependencies are the last ones of their task's list
            per_task: dict[int, int] = {}
            for t, _ in self._explicit:
                per_task[t] = per_task.get(t, 0) + 1
            for t, c in per_task.items():
                kind[int(indptr[t + 1]) - c:int(indptr[t + 1])] = EdgeKind.TASK_DEP
        succ_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=succ_ptr[1:])
        if self._explicit:
            succ = np.fromiter(chain(self.succs), np.int32, count=m)
        else:
            # every successor list is in submission order: a stable sort of the edges by source
            dst = np.repeat(np.arange(n, dtype=np.int32), np.diff(indptr))
            succ = dst[np.argsort(src, kind="stable")]
        if self._explicit and any(t <= d for t, d in self._explicit):
            order = _task_order(n, indptr, src, succ_ptr, succ, self.names, path)
        else:
            order = np.arange(n, dtype=np.int32)  # every dependency points back: submission order is topological
        ops = {name: np.zeros(n, dtype) for name, dtype in OP_COLUMNS.items()}
        ops["kind"][:] = OpKind.KERNEL
        ops["device"][:] = -1  # open placement: the simulator's scheduler decides
        ops["queue"][:] = -1
        ops["thread"][:] = -1
        ops["flops"] = np.array(self.flops, np.float64)
        ops["name_id"] = np.arange(n, dtype=np.int32)
        ops["trace_row"][:] = -1
        ops["source_dur_s"][:] = np.nan  # nothing measured
        ops["kernel_id"] = np.array(self.kernel, TASK_COLUMNS["kernel_id"])
        ops["priority"] = np.array(self.priority, TASK_COLUMNS["priority"])
        ops["footprint"] = np.array([-1 if f is None else f for f in self.footprint], TASK_COLUMNS["footprint"])
        ops["async"] = np.array(self.async_ok, TASK_COLUMNS["async"])
        ops["size_bytes"] = np.array(self.size_bytes, TASK_COLUMNS["size_bytes"])
        access_ptr = _offsets(self.handles, n)
        wu = np.array(self.wont_use, np.int32).reshape(-1, 2)
        tasks = TaskData(
            name=self.name, kernels=list(self.kernels), data_names=list(self.data_names),
            data_bytes=np.array(self.data_bytes, np.int64), access_ptr=access_ptr,
            access_handle=np.array(self._flat_handles, np.int32), access_mode=np.array(self._flat_modes, np.int8),
            succ_ptr=succ_ptr, succ=succ,
            wont_use_task=wu[:, 0].copy(), wont_use_handle=wu[:, 1].copy(), nominal_flops=self.nominal_flops,
        )
        # NOTE: the runtime walks these as tuples and lists; the builder made them already, so
        # they are handed over (not copied: the builder refuses additions from now on).
        tasks.runtime_lists = (self.handles, self.modes, self.succs)
        # NOTE: instance attributes shadow the adding methods (no per-call check in add_task)
        self.add_data = self.add_task = self.add_wont_use = self.link_forward = _refuse_after_build
        return OpGraph(ops=ops, indptr=indptr, src=src, kind=kind, anchor=np.full(m, Anchor.END, np.int8),
                       lag_s=np.zeros(m), order=order, names=list(self.names), origin_ns=0,
                       source=str(path) if path is not None else "", format=TASK_GRAPH_FORMAT,
                       notes=list(self.notes), tasks=tasks)

    def to_json(self) -> dict:
        """The graph in the DAG file format (``to_json(self.build())``)."""
        return to_json(self.build())

    def total_flops(self) -> float:
        """The nominal operation count (the application's formula) when set, else the sum over tasks."""
        return self.nominal_flops if self.nominal_flops is not None else sum(self.flops)


def _refuse_after_build(*_args, **_kwargs) -> None:
    msg = "this TaskGraph was built (its graph shares the builder's lists); start a new TaskGraph to add to it"
    raise ValueError(msg)


def _offsets(lists: list, n: int) -> np.ndarray:
    """CSR offsets (int64, n + 1) of ``n`` sequences."""
    out = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, lists), np.int64, count=n), out=out[1:])
    return out


def _task_order(n: int, indptr: np.ndarray, src: np.ndarray, succ_ptr: np.ndarray, succ: np.ndarray,
                names: list[str], path: str | Path | None) -> np.ndarray:
    """A topological order (Kahn's algorithm, sources in submission order); InputError naming a cycle."""
    indeg = np.diff(indptr).tolist()
    sp, sc = succ_ptr.tolist(), succ.tolist()
    queue = deque(i for i, d in enumerate(indeg) if d == 0)
    order: list[int] = []
    while queue:
        t = queue.popleft()
        order.append(t)
        for s in sc[sp[t]:sp[t + 1]]:
            indeg[s] -= 1
            if indeg[s] == 0:
                queue.append(s)
    if len(order) != n:
        stuck = [i for i, d in enumerate(indeg) if d > 0]
        src_l, ptr = src.tolist(), indptr.tolist()
        cycle = _find_cycle(lambda t: src_l[ptr[t]:ptr[t + 1]], stuck)
        text = " -> ".join(names[i] for i in cycle)
        raise InputError(f"the task graph has a cycle: {text}", path=path, key="tasks", hint="Remove a dependency")
    return np.array(order, np.int32)


def _find_cycle(preds_of, stuck: list[int]) -> list[int]:
    """A cycle among ``stuck`` tasks (those a topological sort could not place); ``preds_of(t)`` lists t's."""
    stuck_set = set(stuck)
    start = stuck[0]
    seen: dict[int, int] = {}
    path: list[int] = []
    node = start
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in preds_of(node) if p in stuck_set)
    cycle = path[seen[node] :] + [node]
    return list(reversed(cycle))


def task_data(graph: OpGraph) -> TaskData:
    """``graph.tasks``, or ValueError when ``graph`` is not a task graph (a traced program's graph)."""
    if graph.tasks is None:
        msg = (f"{graph!r} is not a task graph (it has no data accesses); a traced program's graph is replayed "
               "with nodecast.engine.replay")
        raise ValueError(msg)
    return graph.tasks


def initial_data(graph: OpGraph) -> list[int]:
    """Handles some task reads before any task writes them (they start in host memory), in order of first read.

    A task's reads come before its own writes (an RW access of an unwritten handle reads initial data).
    """
    td = task_data(graph)
    task = np.repeat(np.arange(len(graph)), np.diff(td.access_ptr))
    big = len(graph)
    first_write = np.full(td.n_data, big, np.int64)
    wr = (td.access_mode & W) != 0
    np.minimum.at(first_write, td.access_handle[wr], task[wr])
    rd = np.flatnonzero((td.access_mode & R) != 0)
    reads_initial = rd[task[rd] <= first_write[td.access_handle[rd]]]
    handles, first = np.unique(td.access_handle[reads_initial], return_index=True)
    return handles[np.argsort(first, kind="stable")].tolist()


def total_flops(graph: OpGraph) -> float:
    """The nominal operation count (the application's formula) when set, else the sum over tasks."""
    td = task_data(graph)
    # NOTE: Python's left-to-right sum, as the builder's list sum was (numpy's pairwise sum rounds differently).
    return td.nominal_flops if td.nominal_flops is not None else sum(graph.ops["flops"].tolist())


def critical_path_s(graph: OpGraph, duration_s: list[float]) -> float:
    """Longest path through the graph with the given per-task durations (seconds; no transfers)."""
    finish = [0.0] * len(graph)
    ptr, src = graph.indptr.tolist(), graph.src.tolist()
    for t in graph.order.tolist():
        start = max((finish[p] for p in src[ptr[t]:ptr[t + 1]]), default=0.0)
        finish[t] = start + duration_s[t]
    return max(finish, default=0.0)


def to_json(graph: OpGraph) -> dict:
    """The task graph in the DAG file format (see the module docstring), explicit dependencies included."""
    td = task_data(graph)
    names, data_names, kernels = graph.names, td.data_names, td.kernels
    ops = graph.ops
    kernel, flops, prio = ops["kernel_id"].tolist(), ops["flops"].tolist(), ops["priority"].tolist()
    size, fp, async_ok = ops["size_bytes"].tolist(), ops["footprint"].tolist(), ops["async"].tolist()
    ptr, handle, mode = td.access_ptr.tolist(), td.access_handle.tolist(), td.access_mode.tolist()
    eptr, esrc, ekind = graph.indptr.tolist(), graph.src.tolist(), graph.kind.tolist()
    tasks = []
    for t in range(len(graph)):
        item = {
            "name": names[t],
            "kernel": kernels[kernel[t]],
            "access": [[data_names[h], MODE_NAMES[m]] for h, m in zip(handle[ptr[t]:ptr[t + 1]], mode[ptr[t]:ptr[t + 1]], strict=True)],
            "flops": flops[t],
            "priority": prio[t],
            "size_bytes": size[t],
        }
        if fp[t] >= 0:
            item["footprint"] = f"{fp[t]:08x}"
        if not async_ok[t]:
            item["async"] = False
        deps = [names[esrc[e]] for e in range(eptr[t], eptr[t + 1]) if ekind[e] == EdgeKind.TASK_DEP]
        if deps:
            item["deps"] = deps
        tasks.append(item)
    out = {
        "format": "nodecast-dag",
        "version": 1,
        "name": td.name,
        "data": [{"name": n, "size_bytes": b} for n, b in zip(data_names, td.data_bytes.tolist(), strict=True)],
        "tasks": tasks,
    }
    if len(td.wont_use_task):
        out["wont_use"] = [{"after": names[t], "data": data_names[h]} for t, h in td.wont_use()]
    if td.nominal_flops is not None:
        out["nominal_flops"] = td.nominal_flops
    return out


#: Priorities are kept as int32 (``TASK_COLUMNS``), like StarPU's ``int priority``.
_PRIO_MIN, _PRIO_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)


@paused_gc()
def load_dag(path: str | Path) -> OpGraph:
    """Read a DAG file (see the module docstring) into an OpGraph. Raises InputError naming the file and key of any problem."""
    path = Path(path)
    try:
        with decoder_limits(path, "DAG file", "See nodecast.graph.taskgraph for the format"):
            doc = json.loads(read_input(path, what="DAG file").decode("utf-8"))  # bounded: nodecast.inputs
    except OSError as exc:
        raise InputError(f"cannot read DAG file ({exc.strerror})", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON (line {exc.lineno}: {exc.msg})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})", path=path,
                         hint="A DAG file is UTF-8 JSON; see nodecast.graph.taskgraph") from None
    if not isinstance(doc, dict):
        raise InputError("top level must be an object", path=path)
    if doc.get("format", "nodecast-dag") != "nodecast-dag" or doc.get("version", 1) != 1:
        raise InputError("format must be 'nodecast-dag' version 1", path=path, key="format")
    graph = TaskGraph(name=str(doc.get("name", path.stem)))
    data = doc.get("data", [])
    if not isinstance(data, list):
        raise InputError("must be a list", path=path, key="data")
    for i, item in enumerate(data):
        if not isinstance(item, dict) or "name" not in item or "size_bytes" not in item:
            raise InputError("needs name and size_bytes", path=path, key=f"data[{i}]")
        try:
            graph.add_data(str(item["name"]), item["size_bytes"])
        except InputError as exc:
            raise InputError(exc.reason, path=path, key=f"data[{i}]") from None
    tasks = doc.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise InputError("must be a non-empty list", path=path, key="tasks")
    index: dict[str, int] = {}
    pending_deps: list[tuple[int, str, str]] = []
    for i, item in enumerate(tasks):
        key = f"tasks[{i}]"
        if not isinstance(item, dict):
            raise InputError("must be an object", path=path, key=key)
        kernel = item.get("kernel")
        if not isinstance(kernel, str) or not kernel:
            raise InputError("needs a kernel name", path=path, key=f"{key}.kernel")
        name = str(item.get("name", f"{kernel}#{i}"))
        if name in index:
            raise InputError(f"task name {name!r} is used twice", path=path, key=f"{key}.name")
        access = item.get("access", [])
        if not isinstance(access, list):
            raise InputError("must be a list of [data, mode]", path=path, key=f"{key}.access")
        acc = []
        for j, pair in enumerate(access):
            if not (isinstance(pair, list | tuple) and len(pair) == 2):
                raise InputError("must be [data name, mode]", path=path, key=f"{key}.access[{j}]")
            dname, mode = pair
            if str(dname) not in graph._data_index:
                raise InputError(f"unknown data {dname!r}", path=path, key=f"{key}.access[{j}]", hint="Declare it in data")
            m = MODES.get(str(mode).upper())
            if m is None:
                raise InputError(f"mode must be R, W or RW (got {mode!r})", path=path, key=f"{key}.access[{j}]")
            acc.append((graph._data_index[str(dname)], m))
        fp = item.get("footprint")
        if fp is not None:
            # StarPU's footprint is a 32-bit hash, written in hex ("617e5fe6").
            fp = as_int(fp if isinstance(fp, str) else str(fp), path=path, field=f"{key}.footprint", base=16, ge=0,
                        le=(1 << 32) - 1, hint="Write the footprint as StarPU prints it: 8 hex digits")
        size = item.get("size_bytes")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_DATA_BYTES):
            raise InputError(f"size_bytes must be an integer from 0 to 2^50 (got {size!r})", path=path, key=f"{key}.size_bytes")
        flops = item.get("flops", 0.0)
        prio = item.get("priority", 0)
        # NOTE: Python's JSON reader accepts NaN and Infinity literals, and integers beyond a double's range
        # (float() of 10**400 is an OverflowError); a FLOP count must be a finite double.
        if not isinstance(flops, int | float) or isinstance(flops, bool) or not 0 <= flops <= sys.float_info.max:
            raise InputError(f"flops must be a finite number >= 0 (got {flops!r})", path=path, key=f"{key}.flops")
        async_ok = item.get("async", True)
        if not isinstance(async_ok, bool):
            raise InputError(f"async must be true or false (got {async_ok!r})", path=path, key=f"{key}.async")
        if not isinstance(prio, int) or isinstance(prio, bool) or not _PRIO_MIN <= prio <= _PRIO_MAX:
            raise InputError(f"priority must be an integer from {_PRIO_MIN} to {_PRIO_MAX} (got {prio!r})", path=path,
                             key=f"{key}.priority")
        deps = item.get("deps", [])
        if not isinstance(deps, list):
            raise InputError("must be a list of task names", path=path, key=f"{key}.deps")
        tid = graph.add_task(
            kernel,
            acc,
            flops=float(flops),
            priority=prio,
            name=name,
            footprint=fp,
            size_bytes=size,
            async_ok=async_ok,
        )
        index[name] = tid
        for dep in deps:
            pending_deps.append((tid, str(dep), f"{key}.deps"))
    for tid, dep, key in pending_deps:
        if dep not in index:
            raise InputError(f"unknown task {dep!r}", path=path, key=key)
        graph.link_forward(tid, index[dep])
    wont_use = doc.get("wont_use", [])
    if not isinstance(wont_use, list):
        raise InputError(f"must be a list of {{after, data}} objects (got {json_kind(wont_use)})", path=path,
                         key="wont_use", hint="See nodecast.graph.taskgraph for the format")
    for i, item in enumerate(wont_use):
        try:
            t = index[str(item["after"])]
            h = graph._data_index[str(item["data"])]
        except (KeyError, TypeError):
            raise InputError("needs an existing task 'after' and data 'data'", path=path, key=f"wont_use[{i}]") from None
        graph.wont_use.append((t, h))
    graph.wont_use.sort()
    if "nominal_flops" in doc:
        # NOTE: Python's JSON reader accepts NaN and Infinity; a quoted number is a type error here.
        graph.nominal_flops = as_float(
            doc["nominal_flops"], path=path, field="nominal_flops", ge=0.0, text=False,
            hint="Give the application's operation count as a JSON number >= 0, or leave it out",
        )
    out = graph.build(path)
    initial = initial_data(out)
    if initial:
        out.notes.append(
            f"{len(initial)} data handle(s) are read before any task writes them; they start valid in host memory"
        )
    return out
