"""Independent jobs at once on Dask: the one runner of the simulator's sweeps and the forecast's targets.

``workflows.simulate_sweep`` (simulations over sizes, schedulers, reference
rows) and ``workflows.targets`` (one trace forecast on many nodes) run
independent, single-threaded jobs, so they scale with processes. As
DESIGN.md decides, they run on Dask distributed: a ``LocalCluster`` of
single-threaded worker processes, or an existing Dask scheduler
(``address``, e.g. ``tcp://head:8786``; a cluster started with dask-jobqueue
on SLURM or PBS) to scale past one machine. With one job, or one case,
everything runs in this process (``runs_here``, ``run_here``) and Dask is
not imported.

Dask is the ``parallel`` extra (``nodecast.extras``): ``require_dask`` is the
one ``InputError`` naming it, raised before any work when a job count above 1
or a scheduler address asks for it; without it the callers' automatic choice
runs every job here (``one_at_a_time_note`` says so).

``run_on_dask`` sends what every job shares (platforms and kernel models, a
trace) to the workers once, submits the jobs, and gives their results back
in the order of the jobs, calling ``progress(i)`` (``nodecast.progress.JobDone``)
as each finishes, from this thread. An address that names no scheduler is
one ``InputError`` on ``--cluster``; the cluster it started is shut down
whatever happens.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from nodecast import extras
from nodecast.errors import InputError
from nodecast.progress import JobDone

#: Seconds to wait for an existing scheduler to answer.
CONNECT_TIMEOUT_S = 10

#: Dask settings for a local cluster: the worker's sampling profiler (every 10 ms it walks
#: the running job's stack, under the GIL) and the GIL monitor slow a single-threaded
#: simulation by a third on a 2-core machine; nobody reads them here.
QUIET_WORKERS = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
}

#: What to do when ``--cluster`` names no scheduler.
CONNECT_HINT = "Start one ('dask scheduler', then 'dask worker ADDRESS' on each node) or leave --cluster out"


def require_dask(address: str | None) -> None:
    """The one-line InputError naming the ``parallel`` extra when Dask is not installed: ``address`` (--cluster)
    given, or else a job count above 1 (--jobs)."""
    key = "--jobs" if address is None else "--cluster"
    extras.require("distributed", "running on a Dask cluster" if address else "running several at once", key=key,
                   otherwise=f"leave {key} out to run them one at a time")


def one_at_a_time_note(count: int, what: str) -> str | None:
    """Without Dask, the line telling that the ``count`` ``what`` (``simulations``) run one at a time here and
    how to run them at once; None when Dask is installed."""
    if extras.installed("distributed"):
        return None
    return (f"note: Dask is not installed: the {count} {what} run one at a time "
            f"({extras.hint('distributed')} to run them at once, --jobs N)")


def default_jobs() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def runs_here(jobs: int, count: int, address: str | None) -> bool:
    """Whether ``count`` jobs run one at a time in this process: no scheduler address, and one job at once or at
    most one job to run (a cluster takes seconds to start and would run it no sooner)."""
    return address is None and (jobs == 1 or count <= 1)


def run_here(job: Callable[[int], Any], count: int, progress: JobDone | None = None) -> list[Any]:
    """``job(i)`` for ``i`` in ``range(count)``, one after the other in this process; ``progress(i)`` after each."""
    out = []
    for i in range(count):
        out.append(job(i))
        if progress is not None:
            progress(i)
    return out


def run_on_dask(
    fn: Callable[..., Any],
    count: int,
    args: Callable[[int, Mapping[Hashable, list[Any]]], Sequence[Any]],
    *,
    shared: Mapping[Hashable, Sequence[Any]],
    jobs: int,
    address: str | None,
    progress: JobDone | None = None,
    order: Sequence[int] | None = None,
    name: str = "nodecast-job",
    connect_hint: str = CONNECT_HINT,
) -> list[Any]:
    """Run ``fn(*args(i, sent))`` for every job ``i`` in ``range(count)`` on Dask; results in the order of the jobs.

    Args:
        shared: objects every job needs, ``{key: [objects]}``, sent to every
            worker once (``scatter``, broadcast); ``args`` gets them back as
            ``sent[key]``, a list of futures in the same order, to place
            among job ``i``'s arguments.
        jobs: worker processes of the local cluster (one thread each).
        address: a running Dask scheduler to use instead of a local cluster.
        progress: called with each job's index as it finishes.
        order: the order the jobs are submitted (default: ``0, 1, ...``);
            the first submissions start at once, so this order, not a
            priority, decides what runs first.
        name: prefix of the jobs' Dask keys (``{name}-{i}-{random}``).
        connect_hint: what to do when ``address`` names no scheduler.

    Raises whatever a job raises (an ``InputError`` keeps its message across
    processes); the local cluster is shut down either way.
    """
    import dask
    import distributed  # noqa: F401  NOTE: loads its config defaults before they are overridden (and restored)

    with dask.config.set(QUIET_WORKERS if address is None else {}):
        return _run_on_client(fn, count, args, shared, jobs, address, progress, order, name, connect_hint)


def _run_on_client(fn, count, args, shared, jobs, address, progress, order, name, connect_hint) -> list[Any]:  # noqa: ANN001
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if address is None:
        with workers_ignore_ctrl_c():
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach a Dask scheduler at {address!r} ({exc})", key="--cluster",
                             hint=connect_hint) from None
    try:
        sent = {key: client.scatter(list(objects), broadcast=True) for key, objects in shared.items()}
        order = range(count) if order is None else order
        futures = [client.submit(fn, *args(i, sent), pure=False, key=f"{name}-{i}-{uuid.uuid4().hex}")
                   for i in order]
        index = {f.key: i for i, f in zip(order, futures, strict=True)}
        results: list[Any] = [None] * count
        for fut in as_completed(futures):
            i = index[fut.key]
            results[i] = fut.result()
            if progress is not None:
                progress(i)
        return results
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@contextmanager
def workers_ignore_ctrl_c() -> Iterator[None]:
    """Start worker processes with SIGINT ignored (an ignored signal stays ignored in a child).

    Ctrl-C then reaches only this process, which shuts the cluster down in
    order, instead of every worker printing its own KeyboardInterrupt.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
