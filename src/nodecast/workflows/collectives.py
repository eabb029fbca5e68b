"""``nodecast collectives``: NCCL collectives on one node or several, per message size, as nccl-tests reports them.

``collectives(machines, op, sizes, dtype, gpus)`` evaluates NCCL's cost model
(``nodecast.models.collective_tuning``) on each node's fabric
(``nodecast.models.collective_fabric``) for every size and returns one
``CollectivesResult``: per node and size the time (nccl-tests' "time"), algbw
and busbw (``nodecast.models.collective_busbw``) and the algorithm and
protocol NCCL's model chooses. ``report/`` renders it (terminal table, JSON
and CSV, a busbw-vs-size figure, an HTML page).

Sizes are nccl-tests' "size" (bytes; all_gather: the gathered buffer,
reduce_scatter: the whole input). A size must hold whole elements of the data
type (InputError otherwise); collectives that split the buffer among the ranks
(all_gather, reduce_scatter, all_to_all) round it down to whole elements per
rank, as nccl-tests does, and a size with less than one element per rank is
left out, with a note. ``gpus`` is the group (default: all GPUs of each node);
a group larger than a node is an InputError ("group of N GPUs on a node of M").
Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.headline import Number
from nodecast.models.collective_busbw import COLLECTIVES, algbw, bus_factor
from nodecast.models.collective_fabric import fabric
from nodecast.models.collective_tuning import ALGORITHMS, NONE, PROTOCOLS, predict
from nodecast.models.curves import parse_sizes
from nodecast.traces.op_classes import DType, OpClass, dtype_of, op_class_of
from nodecast.units import fmt_bytes
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine

#: The sizes swept when none are given: nccl-tests' usual -b 8 -e 8G range, powers of two.
DEFAULT_SIZES = "8B:8GiB"
DEFAULT_OP = "all_reduce"
DEFAULT_DTYPE = "bf16"
#: The data types NCCL reduces and moves (ncclDataType_t: int8, fp16, bf16, fp8, fp32, fp64; integer types other
#: than int8 have no DType code).
DTYPES = (DType.INT8, DType.FP8, DType.FP16, DType.BF16, DType.FP32, DType.FP64)
#: The collectives that split a rank's buffer into one part per rank.
_SPLIT = (OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER, OpClass.ALL_TO_ALL)
#: The columns of ``CollectivesResult.table`` (SI units).
COLUMNS = ("machine", "op", "dtype", "gpus", "size_bytes", "elements", "time_s", "algbw_bps", "busbw_bps",
           "algorithm", "protocol")


def parse_op(text: str, *, key: str = "--op") -> OpClass:
    """The collective ``text`` names (``all_reduce``, ``allgather``, ``alltoall``...); InputError listing them."""
    op = op_class_of(text)
    if op not in COLLECTIVES:
        raise InputError(f"unknown collective {text!r}", key=key,
                         hint=f"Give one of: {', '.join(c.key for c in COLLECTIVES)}")
    return op


def parse_dtype(text: str, *, key: str = "--dtype") -> DType:
    """The NCCL data type ``text`` names (``bf16``, ``float16``, ``fp32``...); InputError listing them."""
    dt = dtype_of(text)
    if dt not in DTYPES:
        raise InputError(f"unknown NCCL data type {text!r}", key=key,
                         hint=f"Give one of: {', '.join(d.key for d in DTYPES)}")
    return dt


@dataclass
class CollectivesResult:
    """One collective swept over sizes on one node or several (``table``: ``COLUMNS``, one row per node and size)."""

    op: OpClass
    dtype: DType
    machines: list[Machine]
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The nodes, in the order given."""
        return [m.name for m in self.machines]

    def headline(self) -> list[Number]:
        """Per node: the busbw at the largest size, and the time of the smallest (the latency floor)."""
        out = []
        for name in self.names:
            rows = self.table[self.table["machine"] == name]
            if not len(rows):
                continue
            big, small = rows.iloc[-1], rows.iloc[0]
            out.append(Number(f"busbw on {name}, {fmt_bytes(big['size_bytes'])} on {big['gpus']} GPUs",
                              float(big["busbw_bps"]), "B/s",
                              note=f"{big['algorithm']}/{big['protocol']}; nccl-tests' busbw"))
            out.append(Number(f"time on {name}, {fmt_bytes(small['size_bytes'])}", float(small["time_s"]), "s",
                              note=f"{small['algorithm']}/{small['protocol']}"))
        return out

    def wide(self, column: str = "busbw_bps") -> pd.DataFrame:
        """One row per size, one column per node: ``column`` side by side."""
        return self.table.pivot(index="size_bytes", columns="machine", values=column)[self.names]

    def to_dict(self) -> dict[str, Any]:
        """Headline, what was asked, the table (records, SI units) and the notes: the JSON document."""
        return {"headline": [n.as_dict() for n in self.headline()], "op": self.op.key, "dtype": self.dtype.key,
                "machines": self.names, "rows": self.table, "notes": list(self.notes)}


def _sizes_for(op: OpClass, dtype: DType, sizes: np.ndarray, gpus: int) -> tuple[np.ndarray, list[str]]:
    """``sizes`` as nccl-tests runs them for ``op`` on ``gpus`` ranks (whole elements per rank), and notes."""
    elt = int(dtype.bytes_per_element)
    bad = sizes[sizes % elt != 0]
    if bad.size:
        raise InputError(f"size {fmt_bytes(int(bad[0]))} ({int(bad[0])} B) is not a whole number of {dtype.key} "
                         f"elements ({elt} B each)", key="--sizes",
                         hint=f"Give sizes that are multiples of {elt} B, e.g. {elt}B:8GiB")
    if op not in _SPLIT:
        return sizes, []
    unit = elt * gpus
    out = sizes // unit * unit
    notes = []
    if np.any(out != sizes):
        notes.append(f"{op.key} splits each rank's buffer into {gpus} parts: sizes rounded down to whole "
                     f"{dtype.key} elements per rank (multiples of {unit} B), as nccl-tests does")
    if np.any(out == 0):
        notes.append(f"{plural(int(np.count_nonzero(out == 0)), 'size')} under {unit} B left out: less than one "
                     f"element per rank")
    kept = np.unique(out[out > 0])
    return kept, notes


def collectives(machines: Sequence[Machine], op: OpClass | str = DEFAULT_OP, sizes: np.ndarray | str = DEFAULT_SIZES,
                dtype: DType | str = DEFAULT_DTYPE, gpus: int | None = None) -> CollectivesResult:
    """``op`` of every size on each of ``machines`` (module docstring); ``gpus`` None: all of each node's GPUs."""
    op = parse_op(op) if isinstance(op, str) else op
    dtype = parse_dtype(dtype) if isinstance(dtype, str) else dtype
    sizes = parse_sizes(sizes) if isinstance(sizes, str) else np.asarray(sizes, dtype=np.int64)
    if not machines:
        raise InputError("no node given", key="--to", hint="Name one or more, e.g. --to dgx-a100,h100-sxm5-server")
    if gpus is not None and gpus < 2:
        raise InputError(f"a collective needs a group of at least 2 GPUs (got {gpus})", key="--gpus")
    frames, notes = [], []
    for machine in machines:
        fab = fabric(machine)
        n = gpus if gpus is not None else fab.gpus
        fab.check_group(np.array([n]), "--gpus")
        if n < 2:
            raise InputError(f"{machine.name} has one GPU: a collective needs 2 or more", key="--to")
        run, size_notes = _sizes_for(op, dtype, sizes, n)
        notes += [note for note in size_notes if note not in notes]
        if not run.size:
            raise InputError(f"no size left to run {op.key} on {n} GPUs", key="--sizes",
                             hint=f"Give sizes of at least {int(dtype.bytes_per_element) * n} B")
        ops = np.full(run.size, op, dtype=np.int16)
        group = np.full(run.size, n)
        choice = predict(ops, run, group, fab)
        frames.append(pd.DataFrame({
            "machine": machine.name, "op": op.key, "dtype": dtype.key, "gpus": n, "size_bytes": run,
            "elements": run // int(dtype.bytes_per_element), "time_s": choice.time_s,
            "algbw_bps": algbw(run, choice.time_s), "busbw_bps": algbw(run, choice.time_s) * bus_factor(ops, group),
            "algorithm": [ALGORITHMS[a] if a != NONE else "" for a in choice.algorithm],
            "protocol": [PROTOCOLS[p] if p != NONE else "" for p in choice.protocol]}))
        notes += [note for note in fab.notes if note not in notes]
    notes.append("NCCL's own cost model (src/graph/tuning.cc) on each node's links, from data sheets alone: "
                 "no launch or framework overhead; docs/collectives.md gives its error against NVIDIA's measurements")
    table = pd.concat(frames, ignore_index=True)[list(COLUMNS)]
    return CollectivesResult(op, dtype, list(machines), table, notes)
