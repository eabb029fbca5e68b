"""Project and evaluate from file and machine names, as ``nodecast project`` and ``nodecast evaluate`` do.

``cost.project.project`` and ``workflows.evaluate.evaluate`` take a loaded Trace and two Machines; these take what a
person types — a trace path (or ``sample:NAME``) and machine names, catalogue files or spec strings — and pick
the source node from the trace when it is not given (``machines.resolve_source``), exactly as the commands do. A
target naming a GPU only is A's node with that GPU (``workflows.target_nodes.target_machine``). Units: seconds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from nodecast.cost.ops import CostOptions
from nodecast.cost.project import Projection, project
from nodecast.machines.resolve import resolve_source
from nodecast.machines.schema import Machine
from nodecast.traces.load import load_trace
from nodecast.traces.ncu import KernelMetrics
from nodecast.traces.trace import Trace
from nodecast.workflows.evaluate import Evaluation, add_whole_run, evaluate
from nodecast.workflows.target_nodes import target_machine

TraceLike = str | os.PathLike[str] | Trace
MachineLike = str | Machine


def _trace(value: TraceLike) -> Trace:
    return value if isinstance(value, Trace) else load_trace(value)


def _source(trace: Trace, source: MachineLike | None, allow_gpu_mismatch: bool) -> Machine:
    if isinstance(source, Machine):
        return source
    return resolve_source(trace, source, allow_gpu_mismatch)


def project_trace(trace: TraceLike, target: MachineLike, source: MachineLike | None = None, *,
                  models: list[str] | None = None, kind: str | None = None, metrics: KernelMetrics | None = None,
                  one_byte_s: Mapping[str, float] | None = None, host_memory: str | None = None,
                  allow_gpu_mismatch: bool = False) -> Projection:
    """Per-op times of ``trace`` on ``target``, every chosen model side by side (``nodecast project``).

    ``models``: registry names (None: every model of ``kind``, or of every kind); ``metrics``: Nsight Compute
    metrics of the trace's kernels (``traces.ncu.read_ncu_csv``); ``one_byte_s``: 1-byte costs in seconds per
    transfer class key (or ``"all"``); ``host_memory``: the host memory kind a trace does not record.
    """
    tr = _trace(trace)
    src = _source(tr, source, allow_gpu_mismatch)
    tgt = target if isinstance(target, Machine) else target_machine(target, src)
    return project(tr, src, tgt, models, kind=kind, metrics=metrics, one_byte_s=one_byte_s, host_memory=host_memory)


def evaluate_traces(run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], source: MachineLike | None = None,
                    target: MachineLike | None = None, *, models: list[str] | None = None,
                    metrics: KernelMetrics | None = None, one_byte_s: Mapping[str, float] | None = None,
                    host_memory: str | None = None, allow_gpu_mismatch: bool = False) -> Evaluation:
    """Run A projected onto run B's node, against run B as measured: per-op WMAPE per model and the whole runs
    compared (``nodecast evaluate A B``). ``source``/``target``: the nodes of A and B, picked from each trace's GPU
    when None and checked against it when named."""
    a, b = load_trace(run_a), load_trace(run_b)
    src = _source(a, source, allow_gpu_mismatch)
    tgt = target if isinstance(target, Machine) else resolve_source(b, target, allow_gpu_mismatch, option="--to")
    ev = evaluate(a, b, src, tgt, models, metrics=metrics, one_byte_s=one_byte_s, host_memory=host_memory)
    return add_whole_run(ev, run_a, run_b, CostOptions(metrics=metrics, one_byte_s=one_byte_s, host_memory=host_memory))


__all__ = ["evaluate_traces", "project_trace"]
