"""Task graphs: tasks that access data handles, with StarPU's implicit dependencies.

A ``TaskGraph`` is built the way a StarPU application submits work
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

Storage is columnar (plain lists indexed by task id) because the simulator
walks it tens of thousands of times per run.

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
(or ``footprint``) selects the model's entry.
"""

from __future__ import annotations

import gc
import json
import math
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from nodecast.errors import InputError
from nodecast.values import as_float, as_int, json_kind

R, W, RW = 1, 2, 3
MODES = {"R": R, "W": W, "RW": RW, "STARPU_R": R, "STARPU_W": W, "STARPU_RW": RW, "READ": R, "WRITE": W}
MODE_NAMES = {R: "R", W: "W", RW: "RW"}
#: largest data handle (bytes): 1 PiB, beyond any node's memory
MAX_DATA_BYTES = 1 << 50


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
    """Tasks in submission order, the data handles they access, and their dependencies.

    Per-task lists (index = task id): ``kernel`` (index into ``kernels``),
    ``handles`` and ``modes`` (tuples), ``flops``, ``priority``, ``size_bytes``
    (the model footprint size), ``footprint`` (hash or None), ``async_ok``,
    ``preds`` and ``succs`` (task ids), ``names``. Per-handle lists:
    ``data_names``, ``data_bytes``. ``wont_use`` holds ``(task, handle)``: after
    ``task`` was submitted, StarPU's ``starpu_data_wont_use(handle)`` was called.
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

        Dependencies on earlier tasks are derived by sequential consistency.
        """
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
        if extra_deps:
            preds.extend(extra_deps)
        # NOTE: a set answers "all distinct?" cheaper than rebuilding the list;
        # the list is only rebuilt (same result) when it has a duplicate or ``tid``.
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
        self.flops.append(float(flops))
        self.priority.append(int(priority))
        self.size_bytes.append(size_bytes if size_bytes is not None else total)
        self.footprint.append(footprint)
        self.async_ok.append(bool(async_ok))
        self.preds.append(preds)
        self.succs.append([])
        succs = self.succs
        for d in preds:
            if d < tid:
                succs[d].append(tid)
        return tid

    def add_wont_use(self, handle: int) -> None:
        """Record ``starpu_data_wont_use(handle)`` right after the last submitted task."""
        self.wont_use.append((len(self.kernel) - 1, handle))

    def link_forward(self, task: int, dep: int) -> None:
        """Add an explicit dependency of ``task`` on ``dep`` (possibly a later task)."""
        if dep not in self.preds[task]:
            self.preds[task].append(dep)
            self.succs[dep].append(task)

    def check_acyclic(self, path: str | Path | None = None) -> None:
        """Raise InputError naming tasks on a cycle when the graph is not a DAG."""
        indeg = [len(p) for p in self.preds]
        queue = deque(i for i, d in enumerate(indeg) if d == 0)
        seen = 0
        while queue:
            t = queue.popleft()
            seen += 1
            for s in self.succs[t]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    queue.append(s)
        if seen != self.n_tasks:
            stuck = [i for i, d in enumerate(indeg) if d > 0]
            cycle = _find_cycle(self, stuck)
            names = " -> ".join(self.names[i] for i in cycle)
            raise InputError(f"the task graph has a cycle: {names}", path=path, key="tasks", hint="Remove a dependency")

    def initial_data(self) -> list[int]:
        """Handles some task reads before any task writes them (they start in host memory)."""
        written: set[int] = set()
        out: dict[int, None] = {}
        for hs, ms in zip(self.handles, self.modes, strict=True):
            for h, m in zip(hs, ms, strict=True):
                if m & R and h not in written:
                    out[h] = None
            for h, m in zip(hs, ms, strict=True):
                if m & W:
                    written.add(h)
        return list(out)

    def total_flops(self) -> float:
        """The nominal operation count (the application's formula) when set, else the sum over tasks."""
        return self.nominal_flops if self.nominal_flops is not None else sum(self.flops)

    def critical_path_s(self, duration_s: list[float]) -> float:
        """Longest path through the graph with the given per-task durations (no transfers)."""
        finish = [0.0] * self.n_tasks
        for t in range(self.n_tasks):
            start = max((finish[p] for p in self.preds[t]), default=0.0)
            finish[t] = start + duration_s[t]
        return max(finish, default=0.0)

    def to_json(self) -> dict:
        """The graph in the DAG file format (see the module docstring)."""
        tasks = []
        for t in range(self.n_tasks):
            item = {
                "name": self.names[t],
                "kernel": self.kernels[self.kernel[t]],
                "access": [[self.data_names[h], MODE_NAMES[m]] for h, m in zip(self.handles[t], self.modes[t], strict=True)],
                "flops": self.flops[t],
                "priority": self.priority[t],
                "size_bytes": self.size_bytes[t],
            }
            if self.footprint[t] is not None:
                item["footprint"] = f"{self.footprint[t]:08x}"
            if not self.async_ok[t]:
                item["async"] = False
            tasks.append(item)
        out = {
            "format": "nodecast-dag",
            "version": 1,
            "name": self.name,
            "data": [{"name": n, "size_bytes": b} for n, b in zip(self.data_names, self.data_bytes, strict=True)],
            "tasks": tasks,
        }
        if self.wont_use:
            out["wont_use"] = [{"after": self.names[t], "data": self.data_names[h]} for t, h in self.wont_use]
        if self.nominal_flops is not None:
            out["nominal_flops"] = self.nominal_flops
        return out


def _find_cycle(graph: TaskGraph, stuck: list[int]) -> list[int]:
    """A cycle among ``stuck`` tasks (those a topological sort could not place)."""
    stuck_set = set(stuck)
    start = stuck[0]
    seen: dict[int, int] = {}
    path: list[int] = []
    node = start
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in graph.preds[node] if p in stuck_set)
    cycle = path[seen[node] :] + [node]
    return list(reversed(cycle))


@paused_gc()
def load_dag(path: str | Path) -> TaskGraph:
    """Read a DAG file (see the module docstring). Raises InputError naming the file and key of any problem."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read DAG file ({exc.strerror})", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON (line {exc.lineno}: {exc.msg})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})", path=path,
                         hint="A DAG file is UTF-8 JSON; see nodecast.sim.dag") from None
    except RecursionError:
        raise InputError("JSON nested too deeply to be a DAG file", path=path, hint="See nodecast.sim.dag for the format") from None
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
        # NOTE: Python's JSON reader accepts NaN and Infinity literals; a FLOP count must be finite.
        if not isinstance(flops, int | float) or isinstance(flops, bool) or not 0 <= flops < math.inf:
            raise InputError(f"flops must be a finite number >= 0 (got {flops!r})", path=path, key=f"{key}.flops")
        async_ok = item.get("async", True)
        if not isinstance(async_ok, bool):
            raise InputError(f"async must be true or false (got {async_ok!r})", path=path, key=f"{key}.async")
        if not isinstance(prio, int) or isinstance(prio, bool):
            raise InputError(f"priority must be an integer (got {prio!r})", path=path, key=f"{key}.priority")
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
                         key="wont_use", hint="See nodecast.sim.dag for the format")
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
    graph.check_acyclic(path)
    initial = graph.initial_data()
    if initial:
        graph.notes.append(
            f"{len(initial)} data handle(s) are read before any task writes them; they start valid in host memory"
        )
    return graph
