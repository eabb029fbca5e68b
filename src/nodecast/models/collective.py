"""The collective models: NCCL's (and RCCL's) collectives on the target node's NVLink, NVSwitch and PCIe fabric.

A trace records a collective as the kernel NCCL launched; the readers fill
what it computed (``nodecast.traces.collectives``): its op class
(``all_reduce`` ... ``send_recv``), data type, message size (``bytes``:
nccl-tests' size), group (``gpus``) and, where the name or the profiler says,
the algorithm and protocol NCCL ran. Two models project such ops:

* ``nccl``: NCCL's own cost model (``nodecast.models.collective_tuning``) on
  the target's fabric (``nodecast.models.collective_fabric``), from the data
  sheets alone: per algorithm and protocol latency + size / bandwidth, the
  cheapest wins, as NCCL chooses.
* ``nccl-scaled`` (the default): the source run as calibration, as
  ``nodecast.models.scaled`` does for copies::

      T_target = T_measured * nccl(target) / nccl(source)

  where the source side uses the algorithm and protocol the trace recorded
  (NCCL may choose otherwise on the target: the target side chooses as NCCL
  would there). Where the source's node cannot hold the group (a node composed
  from a one-rank trace has one GPU unless ``--from`` names the node) the
  measured time is kept; where nothing was measured, the absolute time; each
  with a note.

Both project only collective kernels whose class, size and group are known;
other ops are NaN. A group larger than the target's GPUs spans several nodes
(the shared A100 training trace's world of 16 ranks): the network between
nodes is not modelled, so ``nccl`` leaves those collectives NaN and
``nccl-scaled`` keeps their measured time (the collective chain keeps them from
the kernel models either way), with a note naming how many. The trace holds
one rank: every rank of the group is taken to run the same collective at the
same moment (symmetric arrival), so the time is the collective's own and no
rank waits for a late one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.models.base import ModelResult
from nodecast.models.collective_busbw import COLLECTIVES
from nodecast.models.collective_fabric import fabric
from nodecast.models.collective_tuning import ALGORITHMS, NONE, PROTOCOLS, Choice, predict
from nodecast.traces.kinds import OpKind
from nodecast.traces.op_classes import Algorithm, OpClass, Protocol
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

#: The kind of model (``Model.kind``) and of op these models project.
COLLECTIVE = "collective"
#: The trace's ``Algorithm``/``Protocol`` codes -> the tuning model's (by name; unknown -> ``NONE``).
_ALGO_CODES = np.full(max(a.value for a in Algorithm) + 1, NONE, dtype=np.int8)
for _a in Algorithm:
    if _a.key in ALGORITHMS:
        _ALGO_CODES[_a.value] = ALGORITHMS.index(_a.key)
_PROTO_CODES = np.full(max(p.value for p in Protocol) + 1, NONE, dtype=np.int8)
for _p in Protocol:
    if _p.key in PROTOCOLS:
        _PROTO_CODES[_p.value] = PROTOCOLS.index(_p.key)
#: The assumption every collective projection rests on (the trace holds one rank).
SYMMETRIC = ("the trace holds one rank: every rank of a collective's group is taken to run it at the same moment "
             "(symmetric arrival), so its time is the collective's own, without waiting for a late rank")


def collective_mask(trace: Trace) -> np.ndarray:
    """The ops the collective models answer for: kernels whose op class is a collective (``COLLECTIVES``)."""
    return (trace["kind"] == OpKind.KERNEL) & np.isin(trace["op_class"], COLLECTIVES)


def groups(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The group size of ``rows``: the trace's, and 2 for a send/receive whose group it does not record (a pair)."""
    g = trace["gpus"][rows].astype(np.int64)
    return np.where((trace["op_class"][rows] == OpClass.SEND_RECV) & (g < 2), 2, g)


def modelled(trace: Trace, machine: Machine) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of the collectives, those NCCL's model can time on ``machine`` (message size > 0 and a group of 2 up to its
    GPUs), those whose size or group the trace does not record, and those whose group the node cannot hold: three
    boolean masks over the trace."""
    accepted = collective_mask(trace)
    rows = np.flatnonzero(accepted)
    g = np.full(len(trace), -1, dtype=np.int64)
    g[rows] = groups(trace, rows)
    unknown = accepted & ((g < 2) | (trace["bytes"] <= 0))
    beyond = accepted & ~unknown & (g > machine.gpu.count)
    return accepted & ~unknown & ~beyond, unknown, beyond


def recorded(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The algorithm and protocol the trace recorded for ``rows`` (tuning codes; ``NONE`` where it does not say)."""
    algo = np.clip(trace["algorithm"][rows].astype(np.int64), 0, len(_ALGO_CODES) - 1)
    proto = np.clip(trace["protocol"][rows].astype(np.int64), 0, len(_PROTO_CODES) - 1)
    return _ALGO_CODES[algo], _PROTO_CODES[proto]


def on_machine(trace: Trace, rows: np.ndarray, machine: Machine, *, as_recorded: bool = False) -> Choice:
    """NCCL's model of the collectives ``rows`` of ``trace`` on ``machine`` (``as_recorded``: with the algorithm
    and protocol the trace recorded, where the node has them)."""
    algo, proto = recorded(trace, rows) if as_recorded else (None, None)
    return predict(trace["op_class"][rows], trace["bytes"][rows], groups(trace, rows), fabric(machine),
                   algorithm=algo, protocol=proto)


def choice_notes(choice: Choice, machine: Machine) -> list[str]:
    """What NCCL's model chose on ``machine``: the ops per algorithm and protocol, most first."""
    ok = choice.algorithm != NONE
    if not ok.any():
        return []
    pairs, counts = np.unique(np.stack([choice.algorithm[ok], choice.protocol[ok]]), axis=1, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    parts = [f"{ALGORITHMS[pairs[0, i]]}/{PROTOCOLS[pairs[1, i]]} {counts[i]:,}" for i in order]
    return [f"collectives on {machine.name} as NCCL's model chooses them (algorithm/protocol, ops): {', '.join(parts)}"]


def spanning_note(sizes: np.ndarray, target: Machine, what: str) -> str:
    """Say that groups of ``sizes`` GPUs span more GPUs than ``target`` has: a job over several nodes."""
    largest = int(sizes.max())
    return (f"{plural(int(sizes.size), 'collective')} of a group larger than {target.name}'s "
            f"{plural(target.gpu.count, 'GPU')} (up to {largest}: a job over several nodes; the network between nodes "
            f"is not modelled): {what}")


class NcclModel:
    """NCCL's cost model of every collective on the target, from the data sheets alone (absolute)."""

    name: ClassVar[str] = "nccl"
    kind: ClassVar[str] = COLLECTIVE
    baseline: ClassVar[bool] = False
    absolute: ClassVar[bool] = True
    #: A trace without collectives is not this model's: ``cost.project`` need not list it among the idle models.
    quiet_when_idle: ClassVar[bool] = True
    description: ClassVar[str] = ("NCCL/RCCL collectives from NCCL's tuning model on the target's NVLink, NVSwitch "
                                  "and PCIe links (data sheets alone)")

    def accepts(self, trace: Trace) -> np.ndarray:
        """Kernels that ran a collective (``collective_mask``)."""
        return collective_mask(trace)

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """The collectives' times on ``target`` (s); NaN elsewhere, and where the size or group is not recorded or
        the group is larger than the node (a note says how many)."""
        time_s = np.full(len(trace), np.nan)
        ok, unknown, beyond = modelled(trace, target)
        if not (ok | unknown | beyond).any():
            return ModelResult(self.name, time_s)  # nothing to say: most traces run no collective
        rows = np.flatnonzero(ok)
        choice = on_machine(trace, rows, target)
        time_s[rows] = choice.time_s
        notes = [*fabric(target).notes, *choice_notes(choice, target), SYMMETRIC]
        notes += _left_notes(trace, unknown, beyond, target, "left unprojected")
        return ModelResult(self.name, time_s, notes=notes)


def _left_notes(trace: Trace, unknown: np.ndarray, beyond: np.ndarray, target: Machine, what: str) -> list[str]:
    out = []
    if unknown.any():
        out.append(f"{plural(int(unknown.sum()), 'collective')} whose message size or group the trace does not "
                   f"record: {what}")
    if beyond.any():
        out.append(spanning_note(trace["gpus"][beyond], target, what))
    return out


class NcclScaledModel(NcclModel):
    """The measured time of every collective x NCCL's model on the target / on the source (the default)."""

    name: ClassVar[str] = "nccl-scaled"
    absolute: ClassVar[bool] = False
    #: Needs the source's measured times (as ``nodecast.models.scaled``).
    source_scaled: ClassVar[bool] = True
    description: ClassVar[str] = ("NCCL/RCCL collectives: time measured on A x NCCL's model on B / on A "
                                  "(the source run as calibration)")

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """``T_measured x nccl(target) / nccl(source)`` per collective; the absolute time where no ratio exists;
        the measured time where the model cannot time the collective on the target (its size or group unknown,
        a group beyond the node): left NaN, the kernel models would take it for a compute kernel."""
        time_s = np.full(len(trace), np.nan)
        ok, unknown, beyond = modelled(trace, target)
        if not (ok | unknown | beyond).any():
            return ModelResult(self.name, time_s)  # nothing to say: most traces run no collective
        seconds = trace.duration_ns.astype(np.float64) * 1e-9
        kept = unknown | beyond
        time_s[kept] = seconds[kept]
        rows = np.flatnonzero(ok)
        on_target = on_machine(trace, rows, target)
        on_source = on_machine(trace, rows, source, as_recorded=True)
        measured = seconds[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = on_target.time_s / on_source.time_s
        usable = np.isfinite(ratio) & (on_source.time_s > 0) & (measured > 0)
        # No ratio but a measurement (the source node cannot hold the group): A's time, as "nothing changes" would
        # give, rather than a data-sheet time 19-30 % off (docs/collectives.md); no measurement: the model's time.
        unscaled = ~usable & (measured > 0)
        time_s[rows] = np.where(usable, measured * ratio, np.where(unscaled, measured, on_target.time_s))
        src_fab = fabric(source)
        notes = [f"time measured on {source.name} x (nccl on {target.name}) / (nccl on {source.name}), per "
                 "collective: the source run as calibration; on the source, the algorithm and protocol the trace "
                 "recorded where it did", *src_fab.notes, *fabric(target).notes, *choice_notes(on_target, target),
                 SYMMETRIC]
        if unscaled.any():
            too_big = (groups(trace, rows) > src_fab.gpus) & unscaled
            why = (f"{source.name} has {plural(src_fab.gpus, 'GPU')}, fewer than the group: no ratio without the "
                   "links they ran on (name the node the trace was recorded on with --from)" if too_big.any()
                   else "no model time on the source")
            notes.append(f"{plural(int(np.count_nonzero(unscaled)), 'collective')} kept at their time measured on "
                         f"{source.name}: {why}")
        absolute = int(np.count_nonzero(~usable & ~unscaled))
        if absolute:
            notes.append(f"{plural(absolute, 'collective')} at nccl's absolute time on {target.name}: no time "
                         "measured on the source")
        notes += _left_notes(trace, unknown, beyond, target, f"kept at their time measured on {source.name}")
        return ModelResult(self.name, time_s, notes=notes)
