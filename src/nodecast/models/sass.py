"""SASS comparison of special-function code between the source and target binaries.

The roofline projection assumes the same memory traffic on both GPUs, but not
the same FLOP: the PTX of a kernel is the same for every GPU, yet special
functions (division, square root, exponential, logarithm...) compile to a
hardware approximation (``MUFU.RCP``, ``MUFU.RSQ``, ``MUFU.EX2``,
``MUFU.LG2``, ``MUFU.RCP64H``...) followed by a different number of FMA/MUL/ADD
refinement steps (Newton iterations, range reduction) on each architecture.
Van Lanker et al. (Euro-Par 2024, section 4.2) therefore compare the basic
blocks that contain such special functions in the SASS of the two binaries,
and weight each block's FLOP difference by the number of threads that ran it
on the source (from SASS-level profiling); all other code is assumed to
execute the same way on both GPUs.

This module

* parses ``cuobjdump -sass`` text (``Function : name`` headers, absolute
  branch targets ``BRA 0x580``) and ``nvdisasm`` text (``.text.name:``
  sections, ``.L_x_N:`` labels, ``BRA `(.L_x_N)``); instruction lines look
  like ``/*0060*/  @!P0 MUFU.LG2 R0, R0 ;`` optionally followed by
  ``/* 0x... */`` encodings or preceded by ``[B------:R-:W-:Y:S04]``
  scheduling annotations;
* splits each function into basic blocks (leaders: the first instruction,
  labels, branch targets, the instruction after a branch, exit, return or
  call);
* finds the special-function blocks (those with a ``MUFU`` instruction) and
  counts their FP64/FP32/FP16 FMA, ADD and MUL instructions
  (``DFMA``/``FFMA``/``HFMA2``, ``DADD``/``FADD``/``HADD2``,
  ``DMUL``/``FMUL``/``HMUL2``, immediate forms included), counted the way
  ncu's ``sm__sass_thread_inst_executed_op_*`` metrics count them (one per
  instruction, whatever its width);
* pairs the special blocks of a function on both sides in order of
  appearance, matching their MUFU signatures (the tuple of MUFU operations);
* with per-instruction thread-execution counts from the source run (a CSV
  with columns ``function``, ``pc_offset``, ``threads_executed`` and an
  optional ``launch``; convert ncu's source-page or CUPTI SASS-metrics
  export to it), changes the target's instruction counts by
  ``sum over paired blocks of (target count - source count) x threads that
  entered the block``. Counts without a ``launch`` column are totals over
  all profiled launches of the function, split among its launches in
  proportion to their source FP instruction counts.

Without execution counts the comparison is listed in the notes and the
target's counts stay equal to the source's, which the notes say. Known
limits: special functions whose slow path lives in a called subroutine
(``__cuda_sm20_*`` in nvdisasm output) are compared only where their blocks
contain MUFU instructions; blocks whose MUFU signature has no partner on the
other side are reported, not weighted.
"""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.traces.ncu import FLOP_OPS, KernelMetrics, base_kernel_name

#: SASS opcode (before the first ".") -> (precision, op) of ncu's op counters.
FLOP_OPCODES: dict[str, tuple[str, str]] = {
    "DFMA": ("fp64", "fma"), "DADD": ("fp64", "add"), "DMUL": ("fp64", "mul"),
    "FFMA": ("fp32", "fma"), "FFMA32I": ("fp32", "fma"),
    "FADD": ("fp32", "add"), "FADD32I": ("fp32", "add"),
    "FMUL": ("fp32", "mul"), "FMUL32I": ("fp32", "mul"),
    "HFMA2": ("fp16", "fma"), "HFMA": ("fp16", "fma"), "HFMA2_32I": ("fp16", "fma"),
    "HADD2": ("fp16", "add"), "HADD": ("fp16", "add"), "HADD2_32I": ("fp16", "add"),
    "HMUL2": ("fp16", "mul"), "HMUL": ("fp16", "mul"), "HMUL2_32I": ("fp16", "mul"),
}
#: Opcodes after which a new basic block starts.
_BLOCK_ENDERS = {"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BREAK", "CONT", "SYNC", "KILL", "BPT"}
_PRECISIONS = ("fp64", "fp32", "fp16")

_INSTR_RE = re.compile(
    r"/\*(?P<offset>[0-9a-fA-F]{4,})\*/\s*\{?\s*"
    r"(?:(?P<pred>@!?U?P(?:T|\d+))\s+)?"
    r"(?P<opcode>[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)"
    r"(?P<operands>[^;]*);")
_FUNC_CUOBJDUMP_RE = re.compile(r"^\s*Function\s*:\s*(?P<name>\S+)\s*$")
_FUNC_NVDISASM_RE = re.compile(r"^\s*\.text\.(?P<name>[^\s:]+):\s*$")
_ARCH_RE = re.compile(r"code for (sm_\d+\w*)|EF_CUDA_SM(\d+)")
_LABEL_RE = re.compile(r"^\s*(?P<label>\.L[\w$.]*):\s*$")
_TARGET_LABEL_RE = re.compile(r"`\((?P<label>\.L[\w$.]*)\)")
#: The start of an instruction line (``/*0060*/``): a line that has it but no full instruction was cut off.
_OFFSET_RE = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/")
#: The dotted line cuobjdump writes after the last instruction of every function.
_FUNC_END_RE = re.compile(r"^\s*\.{5,}\s*$")
_TARGET_HEX_RE = re.compile(r"^\s*(?:[A-Z0-9_.]+\s*,\s*)*0x(?P<hex>[0-9a-fA-F]+)\s*$")


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: function-relative byte offset, guard predicate, opcode with modifiers, operands."""

    offset: int
    predicate: str
    opcode: str
    operands: str

    @property
    def base(self) -> str:
        """The opcode without modifiers (``MUFU.RCP64H`` -> ``MUFU``)."""
        return self.opcode.split(".", 1)[0]

    @property
    def mufu(self) -> str | None:
        """The MUFU operation (``RCP``, ``RSQ``, ``EX2``...) or None."""
        if self.base != "MUFU":
            return None
        parts = self.opcode.split(".")
        return parts[1] if len(parts) > 1 else "?"


@dataclass
class BasicBlock:
    """A straight-line run of instructions of one function."""

    index: int
    instructions: list[Instruction]

    @property
    def start(self) -> int:
        """Byte offset of the block's first instruction."""
        return self.instructions[0].offset

    @property
    def special(self) -> tuple[str, ...]:
        """The MUFU operations of the block, in order (its signature); empty for ordinary blocks."""
        return tuple(m for m in (i.mufu for i in self.instructions) if m is not None)

    def flop_inst(self) -> dict[tuple[str, str], int]:
        """FMA/ADD/MUL instruction counts per precision (static, once per execution of the block)."""
        out = {(p, o): 0 for p in _PRECISIONS for o in FLOP_OPS}
        for ins in self.instructions:
            key = FLOP_OPCODES.get(ins.base)
            if key is not None:
                out[key] += 1
        return out


@dataclass
class SassFunction:
    """A kernel (or device function) of a SASS dump, split into basic blocks."""

    name: str
    arch: str
    instructions: list[Instruction]
    blocks: list[BasicBlock] = field(default_factory=list)

    def special_blocks(self) -> list[BasicBlock]:
        """Blocks that contain a special-function (MUFU) instruction."""
        return [b for b in self.blocks if b.special]


def parse_sass(text: str, path: str | Path | None = None) -> dict[str, SassFunction]:
    """Functions of a ``cuobjdump -sass`` or ``nvdisasm`` listing, by (mangled) name.

    Raises InputError when the text holds no SASS instruction, or was cut
    off (see ``_check_not_truncated``).
    """
    _check_not_truncated(text, path)
    funcs: dict[str, SassFunction] = {}
    arch = ""
    current: SassFunction | None = None
    label_at: dict[str, dict[str, int]] = {}  # function -> label -> offset
    pending: list[str] = []  # labels waiting for their instruction
    for line in text.splitlines():
        m = _ARCH_RE.search(line)
        if m:
            arch = m.group(1) or f"sm_{m.group(2)}"
        m = _FUNC_CUOBJDUMP_RE.match(line) or _FUNC_NVDISASM_RE.match(line)
        if m:
            name = m.group("name")
            current = funcs.setdefault(name, SassFunction(name, arch, []))
            label_at.setdefault(name, {})
            pending = []
            continue
        if current is None:
            continue
        m = _LABEL_RE.match(line)
        if m:
            pending.append(m.group("label"))
            continue
        m = _INSTR_RE.search(line)
        if m:
            ins = Instruction(int(m.group("offset"), 16), m.group("pred") or "", m.group("opcode"),
                              m.group("operands").strip())
            for lab in pending:
                label_at[current.name][lab] = ins.offset
            pending = []
            current.instructions.append(ins)
    funcs = {k: v for k, v in funcs.items() if v.instructions}
    if not funcs:
        raise InputError("no SASS instruction found (expected lines like '/*0060*/  MUFU.RCP R7, R6 ;')",
                         path=path, hint="Give the text output of `cuobjdump -sass BINARY` or `nvdisasm CUBIN`")
    for fn in funcs.values():
        fn.blocks = _split_blocks(fn.instructions, label_at.get(fn.name, {}))
    return funcs


def _check_not_truncated(text: str, path: str | Path | None) -> None:
    """InputError (file and line) when the listing ends mid-instruction or mid-function.

    A copy cut short would otherwise lose the end of its last function without
    a word, and with it that function's special blocks. Two signs: the last
    line starts an instruction (``/*0030*/``) that has no ``;``, or the file
    is cuobjdump output whose functions end with a dotted line and the last
    function has none (excerpts and nvdisasm output, without dotted lines,
    can only be checked the first way).
    """
    lines = text.splitlines()
    last = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), None)
    if last is None:
        return
    hint = "The listing was cut short; save the full output of `cuobjdump -sass` or `nvdisasm` again"
    if _OFFSET_RE.match(lines[last]) and not _INSTR_RE.search(lines[last]):
        raise InputError(f"the last instruction is cut off ({lines[last].strip()[:60]!r})", path=path,
                         key=f"line {last + 1}", hint=hint)
    ends = [i for i, line in enumerate(lines) if _FUNC_END_RE.match(line)]
    if ends:
        heads = [i for i, line in enumerate(lines) if _FUNC_CUOBJDUMP_RE.match(line)]
        if heads and heads[-1] > ends[-1]:
            name = _FUNC_CUOBJDUMP_RE.match(lines[heads[-1]]).group("name")
            raise InputError(f"function {name} (line {heads[-1] + 1}) has no closing '.....' line: the file ends "
                             "inside it", path=path, key=f"line {last + 1}", hint=hint)


def _branch_target(ins: Instruction, labels: Mapping[str, int]) -> int | None:
    m = _TARGET_LABEL_RE.search(ins.operands)
    if m:
        return labels.get(m.group("label"))
    m = _TARGET_HEX_RE.match(ins.operands)
    if m:
        return int(m.group("hex"), 16)
    return None


def _split_blocks(instructions: list[Instruction], labels: Mapping[str, int]) -> list[BasicBlock]:
    leaders = {instructions[0].offset} | set(labels.values())
    for i, ins in enumerate(instructions):
        if ins.base in _BLOCK_ENDERS:
            if i + 1 < len(instructions):
                leaders.add(instructions[i + 1].offset)
            tgt = _branch_target(ins, labels)
            if tgt is not None:
                leaders.add(tgt)
    blocks: list[BasicBlock] = []
    for ins in instructions:
        if ins.offset in leaders or not blocks:
            blocks.append(BasicBlock(len(blocks), []))
        blocks[-1].instructions.append(ins)
    return blocks


def read_sass(path: str | Path) -> dict[str, SassFunction]:
    """Parse a SASS listing file (see ``parse_sass``)."""
    p = Path(path)
    try:
        text = read_input(p, what="SASS listing").decode("utf-8", errors="replace")  # bounded: nodecast.inputs
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # as read_text's universal newlines
    except FileNotFoundError:
        raise InputError("no such file", path=p) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=p) from None
    return parse_sass(text, p)


# -- execution counts ---------------------------------------------------------------------
#: function -> launch (None: all launches) -> pc offset -> threads executed.
Counts = dict[str, dict[int | None, dict[int, float]]]


def read_sass_counts(path: str | Path) -> Counts:
    """Per-instruction thread-execution counts of the source run.

    CSV columns: ``function`` (name as in the SASS dump or as ncu prints
    it), ``pc_offset`` (function-relative, decimal or 0x-hex),
    ``threads_executed``, optional ``launch`` (occurrence of that kernel,
    0-based; without it the counts are totals over all launches). Raises
    InputError naming the file (and the line) when it cannot be read as such
    a UTF-8 CSV or a value is not a count.
    """
    p = Path(path)
    hint = "Give a UTF-8 CSV with columns function, pc_offset, threads_executed[, launch]"
    try:
        raw = read_input(p, what="counts file", key="--sass-counts")  # bounded, devices refused: nodecast.inputs
    except FileNotFoundError:
        raise InputError("no such file", path=p, key="--sass-counts") from None
    except IsADirectoryError:
        raise InputError("is a folder, not a CSV file", path=p, key="--sass-counts", hint=hint) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=p, key="--sass-counts") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a UTF-8 text file (undecodable byte at offset {exc.start})", path=p,
                         key="--sass-counts", hint=hint) from None
    need = ("function", "pc_offset", "threads_executed")
    out: Counts = {}
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames
        if not header or not set(need) <= {h.strip() for h in header}:
            raise InputError(f"needs columns {', '.join(need)} (and optionally launch)", path=p,
                             key="--sass-counts", hint=hint)
        reader.fieldnames = [h.strip() for h in header]
        for r in reader:
            line = f"line {reader.line_num}"
            if None in r or None in r.values():
                fields = len(header) + len(r.get(None) or []) - sum(v is None for v in r.values())
                raise InputError(f"row has {fields} fields, the header has {len(header)}", path=p, key=line,
                                 hint="The CSV is truncated or malformed; export it again")
            function = r["function"].strip()
            if not function:
                raise InputError("empty function name", path=p, key=line)
            off = int(_count_field(r, "pc_offset", p, line, integer=True))
            cnt = float(_count_field(r, "threads_executed", p, line, integer=False))
            launch = (int(_count_field(r, "launch", p, line, integer=True))
                      if (r.get("launch") or "").strip() else None)
            out.setdefault(function, {}).setdefault(launch, {})[off] = cnt
    except csv.Error as exc:
        raise InputError(f"not a readable CSV ({exc})", path=p, key=f"line {reader.line_num}", hint=hint) from None
    if not out:
        raise InputError("no count rows below the header", path=p, key="--sass-counts", hint=hint)
    return out


def _count_field(row: Mapping[str, str], column: str, path: Path, line: str, *, integer: bool) -> int | float:
    """A non-negative number of ``row[column]``: an int (decimal or 0x-hex) or a finite float."""
    text = row[column].strip()
    try:
        if integer:
            value: int | float = int(text, 16) if text.lower().startswith("0x") else int(text)
        else:
            value = float(text.replace(",", ""))
    except ValueError:
        what = "an integer (decimal or 0x-hex)" if integer else "a number"
        raise InputError(f"{column}: {text!r} is not {what}", path=path, key=line) from None
    if not math.isfinite(value) or value < 0:
        what = "an integer >= 0" if integer else "a finite number >= 0"
        raise InputError(f"{column}: must be {what} (got {text!r})", path=path, key=line)
    return value


# -- names ---------------------------------------------------------------------------------
_MANGLED_PART = re.compile(r"(\d+)")


def mangled_simple_name(name: str) -> str | None:
    """The unqualified function name of an Itanium-mangled name (``_Z5mylogPf`` -> ``mylog``).

    Handles plain (``_Z<len><id>``) and nested (``_ZN<len><id>...E``) names; None otherwise.
    """
    if not name.startswith("_Z"):
        return None
    s = name[2:]
    nested = s.startswith("N")
    if nested:
        s = s[1:]
        while s and s[0] in "rVKL":  # cv-qualifiers
            s = s[1:]
    last = None
    while s:
        m = _MANGLED_PART.match(s)
        if not m:
            break
        n = int(m.group(1))
        start = len(m.group(1))
        last = s[start:start + n]
        s = s[start + n:]
        if not nested:
            break
        if s.startswith("I"):  # template args: stop, the name before them is the function's
            break
    return last


def _simple(ncu_name: str) -> str:
    base = base_kernel_name(ncu_name)
    depth, cut = 0, len(base)
    for i, c in enumerate(base):  # drop template arguments
        if c == "<":
            if depth == 0:
                cut = i
                break
            depth += 1
    base = base[:cut]
    return base.rsplit("::", 1)[-1].strip()


def _demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if not tool or not names:
        return {}
    try:
        res = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30,
                             check=True)
    except (OSError, subprocess.SubprocessError):
        return {}
    out = res.stdout.splitlines()
    return dict(zip(names, out, strict=False)) if len(out) == len(names) else {}


def match_functions(kernel_names: list[str], functions: list[str]) -> dict[str, str]:
    """ncu kernel name -> SASS function name: exact, demangled (c++filt), or unique simple name."""
    out: dict[str, str] = {}
    fset = set(functions)
    demangled = _demangle([f for f in functions if f.startswith("_Z")])
    by_demangled = {base_kernel_name(v): k for k, v in demangled.items()}
    simple: dict[str, list[str]] = {}
    for f in functions:
        s = mangled_simple_name(f) or _simple(f)
        simple.setdefault(s, []).append(f)
    for k in kernel_names:
        if k in fset:
            out[k] = k
        elif base_kernel_name(k) in by_demangled:
            out[k] = by_demangled[base_kernel_name(k)]
        else:
            cands = simple.get(_simple(k), [])
            if len(cands) == 1:
                out[k] = cands[0]
    return out


# -- the comparison ------------------------------------------------------------------------
@dataclass
class BlockPair:
    """A special-function block of the source paired with its counterpart on the target."""

    function: str
    signature: tuple[str, ...]
    source: BasicBlock
    target: BasicBlock

    def delta(self) -> dict[tuple[str, str], int]:
        """Target minus source FMA/ADD/MUL instruction counts per execution of the block."""
        s, t = self.source.flop_inst(), self.target.flop_inst()
        return {k: t[k] - s[k] for k in s}


@dataclass
class FunctionComparison:
    """The special-function blocks of one function on both sides."""

    function: str
    pairs: list[BlockPair]
    source_only: list[BasicBlock]
    target_only: list[BasicBlock]

    def static_delta(self) -> dict[tuple[str, str], int]:
        """Sum of the pairs' per-execution deltas (for notes)."""
        out: dict[tuple[str, str], int] = {}
        for p in self.pairs:
            for k, v in p.delta().items():
                out[k] = out.get(k, 0) + v
        return out


def compare_function(name: str, source: SassFunction, target: SassFunction) -> FunctionComparison:
    """Pair the special-function blocks of two builds of one function by MUFU signature, in order."""
    s_blocks, t_blocks = source.special_blocks(), target.special_blocks()
    pairs, source_only = [], []
    j = 0
    used: set[int] = set()
    for sb in s_blocks:
        k = next((i for i in range(j, len(t_blocks)) if t_blocks[i].special == sb.special), None)
        if k is None:
            source_only.append(sb)
            continue
        pairs.append(BlockPair(name, sb.special, sb, t_blocks[k]))
        used.add(k)
        j = k + 1
    target_only = [b for i, b in enumerate(t_blocks) if i not in used]
    return FunctionComparison(name, pairs, source_only, target_only)


def _fmt_delta(d: Mapping[tuple[str, str], float]) -> str:
    parts = [f"{v:+g} {p.upper()} {o.upper()}" for (p, o), v in d.items() if v]
    return ", ".join(parts) if parts else "no FLOP difference"


class SassComparison:
    """Compare the SASS of the source and target builds; adjust the target's instruction counts.

    ``source``/``target`` are parsed listings (``parse_sass``); ``counts``
    the source's per-instruction thread-execution counts (``read_sass_counts``).
    """

    def __init__(self, source: dict[str, SassFunction], target: dict[str, SassFunction],
                 counts: Counts | None = None, *, labels: tuple[str, str] = ("source", "target")) -> None:
        self.source = source
        self.target = target
        self.counts = counts
        self.labels = labels

    @classmethod
    def from_files(cls, source: str | Path, target: str | Path, counts: str | Path | None = None) -> SassComparison:
        """Read the two listings (and the counts CSV when given)."""
        return cls(read_sass(source), read_sass(target), read_sass_counts(counts) if counts else None,
                   labels=(Path(source).name, Path(target).name))

    def comparisons(self) -> dict[str, FunctionComparison]:
        """Per function present in both listings, its special-block comparison."""
        return {n: compare_function(n, self.source[n], self.target[n]) for n in self.source if n in self.target}

    def _block_threads(self, function: str, kernel: str, block: BasicBlock) -> dict[int | None, float] | None:
        if self.counts is None:
            return None
        per = self.counts.get(function) or self.counts.get(kernel)
        if per is None:
            return None
        out: dict[int | None, float] = {}
        for launch, offsets in per.items():
            vals = [offsets[i.offset] for i in block.instructions if i.offset in offsets]
            out[launch] = max(vals) if vals else 0.0  # threads entering the block
        return out

    def target_inst(self, metrics: KernelMetrics, inst: Mapping[tuple[str, str], np.ndarray]
                    ) -> tuple[dict[tuple[str, str], np.ndarray], list[str]]:
        """Target instruction counts per launch of ``metrics`` (rows aligned with ``inst``), and notes."""
        out = {k: np.array(v, dtype=np.float64, copy=True) for k, v in inst.items()}
        notes: list[str] = []
        comps = self.comparisons()
        table = metrics.table
        kernels = list(dict.fromkeys(table["kernel"]))
        mapping = match_functions(kernels, list(comps))
        unmatched = [k for k in kernels if k not in mapping]
        if unmatched:
            notes.append(f"SASS: {len(unmatched)} of {len(kernels)} kernels not found in both listings "
                         "(equal instruction counts assumed for them)")
        adjusted = 0
        src_fp = sum(np.asarray(v, dtype=np.float64) for v in inst.values())
        for kernel, fname in mapping.items():
            comp = comps[fname]
            rows = np.flatnonzero(table["kernel"].to_numpy() == kernel)
            occ = table["occurrence"].to_numpy()[rows]
            short = kernel if len(kernel) <= 50 else kernel[:47] + "..."
            if comp.source_only or comp.target_only:
                notes.append(f"SASS {short}: {len(comp.source_only)} source-only and {len(comp.target_only)} "
                             "target-only special-function blocks (no partner with the same MUFU "
                             "sequence): not weighted")
            if not comp.pairs:
                continue
            static = comp.static_delta()
            if not any(static.values()):
                continue
            if self.counts is None:
                notes.append(f"SASS {short}: {len(comp.pairs)} special-function blocks differ "
                             f"({_fmt_delta(static)} per execution of each on the target); no execution "
                             "counts given (--sass-counts), so equal FLOP counts assumed")
                continue
            delta = {k: np.zeros(len(rows)) for k in out}
            weighted = False
            for pair in comp.pairs:
                threads = self._block_threads(fname, kernel, pair.source)
                if not threads:
                    continue
                d = pair.delta()
                per_launch = np.zeros(len(rows))
                if None in threads:  # totals over all launches: split by source FP instruction counts
                    w = src_fp[rows]
                    w = w / w.sum() if w.sum() > 0 else np.full(len(rows), 1.0 / len(rows))
                    per_launch += threads[None] * w
                for launch, th in threads.items():
                    if launch is not None:
                        per_launch += np.where(occ == launch, th, 0.0)
                if per_launch.any():
                    weighted = True
                for k, v in d.items():
                    if v:
                        delta[k] += v * per_launch
            if not weighted:
                notes.append(f"SASS {short}: no execution counts for its special-function blocks: "
                             "equal FLOP counts assumed")
                continue
            adjusted += 1
            for k in out:
                out[k][rows] = np.maximum(out[k][rows] + delta[k], 0.0)
            total = {k: float(v.sum()) for k, v in delta.items()}
            notes.append(f"SASS {short}: target instruction counts changed by {_fmt_delta(total)} "
                         f"(thread instructions over its {len(rows)} launches)")
        notes.insert(0, f"SASS comparison {self.labels[0]} -> {self.labels[1]}: {adjusted} kernels' "
                        "target FLOP counts adjusted")
        return out, notes
