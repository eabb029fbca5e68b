"""Regenerate the command output shown in README.md and docs/*.md, or check that it is current.

Output pasted by hand drifts: the README's quick start went on showing a table
after the command had grown a "Whole run" table and its exit code had changed
(issue 18). Every block of command output in the documentation is therefore
marked with the command that prints it, and this script reruns the command and
writes what it printed in its place.

Usage (from anywhere; commands run from the repository root)::

    python docs/update_outputs.py            # rerun every block's command, rewrite the blocks that changed
    python docs/update_outputs.py --check    # rerun, rewrite nothing; exit 1 if a block differs or a command fails
    python docs/update_outputs.py --fast     # leave out the blocks marked slow
    python docs/update_outputs.py --measure  # also the blocks marked measured (benchmarks: new timings)
    python docs/update_outputs.py --list     # the managed blocks, nothing run
    python docs/update_outputs.py --only bandwidthtest README.md   # blocks whose command holds a text, in some files
    python docs/update_outputs.py --jobs 1   # one command at a time (default: one per CPU; measured blocks run alone)

The convention. A marker comment names the command; the fenced block after it
holds the output; ``<!-- /output -->`` closes it (without a fenced block, the
Markdown between the marker and the closing comment is the output as printed:
a benchmark that prints a Markdown table)::

    <!-- output: nodecast evaluate sample:A sample:B --from titan --to summit -->
    ```
    (what the command printed)
    ```
    <!-- /output -->

The marker may carry options, one per line, before its ``-->``::

    <!-- output: nodecast evaluate sample:A sample:C --from titan --to summit
    exit: 2
    -->

``exit: N``
    the exit status the command must end with (default 0); any other is a
    failure of the block, reported, and the block is left as it was.
``prompt``
    the block starts with ``$ COMMAND``, as a terminal shows it.
``from: REGEX``
    start at the first line REGEX finds (``re.search``); the lines before it
    become one ``...`` line.
``until: REGEX``
    stop before the first line REGEX finds; the lines from there on become
    one ``...`` line.
``part: REGEX`` or ``part: REGEX .. REGEX`` (repeatable)
    keep the first line the first REGEX finds, or the lines from there up to
    (not including) the first line after it that the second REGEX finds;
    several parts are kept in order, and the lines between them become
    ``...`` lines (applied first).
``lines: REGEX``
    keep only the lines REGEX finds; each run of lines left out becomes one
    ``...`` line.
``head: N``
    keep the first N lines of what is left, then ``...``.
``stdin: above``
    the fenced block just above the marker (a Python snippet) is the
    command's standard input: ``<!-- output: python -`` runs the code shown.
``scratch``
    run in an empty temporary folder whose ``../shared`` is the repository's
    ``../shared``, for commands and snippets that write files (the files are
    thrown away; ``sample:`` names and ``../shared`` paths work there).
``shared``
    the command reads ``../shared`` without naming it (a benchmark that finds
    the shared data itself): skipped where it is absent, as the blocks whose
    command or input names ``../shared`` are.
``slow``
    takes more than about 20 s, or writes a file into the repository (a
    figure the page shows): the test leaves it out; this script reruns it
    unless ``--fast``.
``measured``
    prints timings of the machine it ran on (a benchmark): rerun only with
    ``--measure`` (then read the prose that quotes it again); with
    ``--check --measure`` only its layout is compared (every number masked).
    Implies ``slow``.

Output that cannot be regenerated (a run of code that no longer exists, a
file made by hand, a machine not at hand) says why on the line above its
fence: ``<!-- output-by-hand: WHY -->``. A plain fenced block that looks like
program output (table borders, ``note:`` or ``nodecast: error:`` lines, a
``$`` prompt, or right after a Python snippet) with neither comment is
reported, and fails ``--check``: that is how drift would come back.

How a command runs: ``bash -c COMMAND`` (so pipes and ``<(...)`` work), from
the repository root, with the folder of the Python running this script first
on ``PATH`` (its ``nodecast`` and ``python``), standard output and standard
error together as a terminal shows them, and an environment that makes the
output the same on every machine: ``NO_COLOR=1``, ``COLUMNS=160`` (the width
nodecast's results console takes when its output is piped), ``LINES=50``,
``PYTHONUNBUFFERED=1`` (so stdout and stderr lines keep their order),
``TZ=UTC``, ``LC_ALL=C.UTF-8``. A command shown in several blocks runs once.
A block whose command or input names ``../shared`` needs the shared data
beside the repository and is skipped, saying so, when it is absent.

Normalisation, the one rule for what would differ between checkouts and runs:
trailing spaces are removed from every line (rich pads a table's title to the
table's width), empty lines at the end are dropped, and the absolute paths of
the repository, of ``../shared`` and of the scratch folder are written as the
relative paths a reader types (``src/...``, ``../shared/...``, nothing). Output
that varies from run to run otherwise (timings, temporary names) belongs in a
``measured`` block or not in a block at all.

Standard library only, so that it runs wherever nodecast does.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

#: The repository root: the folder above docs/.
ROOT = Path(__file__).resolve().parents[1]
#: The shared data beside the repository (absent in a user's own clone).
SHARED = ROOT.parent / "shared"

MARKER = "<!-- output:"
END = "<!-- /output -->"
FLAGS = frozenset({"prompt", "scratch", "shared", "slow", "measured"})
VALUED = frozenset({"exit", "from", "head", "lines", "part", "stdin", "until"})
#: Seconds one command may take before it counts as failed (a sweep of benchmarks takes minutes).
TIMEOUT_S = 1800
#: What --check compares in a measured block: the layout, every number masked.
_NUMBER = re.compile(r"\d[\d,.]*")


class MarkupError(ValueError):
    """A marker, fence or closing comment that does not follow the convention (file and line in the message)."""


@dataclass
class Block:
    """One managed block: where it is, what runs, and the text it holds now."""

    path: Path
    line: int  # 1-based line of the marker
    command: str
    options: dict[str, str] = field(default_factory=dict)
    fence: str = "```"  # the opening fence line, kept as written (```text, ~~~); "" for raw Markdown
    body: list[str] = field(default_factory=list)  # the lines between the fences
    body_start: int = 0  # 0-based index of the first body line in the file's lines
    body_end: int = 0  # 0-based index of the closing fence
    stdin: str | None = None
    rank: int = 0  # how many blocks of the same command come before it in its file

    @property
    def where(self) -> str:
        try:
            name = self.path.relative_to(ROOT)
        except ValueError:
            name = self.path
        return f"{name}:{self.line}"

    @property
    def slow(self) -> bool:
        return "slow" in self.options or "measured" in self.options

    @property
    def measured(self) -> bool:
        return "measured" in self.options

    @property
    def needs_shared(self) -> bool:
        """Whether the command or its input reads ../shared (skipped, with a reason, where it is absent)."""
        return "shared" in self.options or "../shared" in self.command or "../shared" in (self.stdin or "")

    @property
    def expected_exit(self) -> int:
        return int(self.options.get("exit", "0"))


@dataclass
class Outcome:
    """What rerunning one block gave: the new body, or why there is none."""

    block: Block
    status: str  # "same", "changed", "failed", "skipped"
    body: list[str] | None = None
    reason: str = ""


def _fence_of(line: str) -> str | None:
    stripped = line.strip()
    for mark in ("```", "~~~"):
        if stripped.startswith(mark):
            return mark
    return None


def _previous_fenced(lines: Sequence[str], before: int, path: Path) -> str:
    """The content of the fenced block that ends just above line index ``before`` (blank lines between allowed)."""
    i = before - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0 or _fence_of(lines[i]) is None:
        raise MarkupError(f"{path}:{before + 1}: 'stdin: above' but no fenced block ends just above the marker")
    mark = _fence_of(lines[i])
    j = i - 1
    while j >= 0 and not lines[j].strip().startswith(mark):  # type: ignore[arg-type]
        j -= 1
    if j < 0:
        raise MarkupError(f"{path}:{i + 1}: the fenced block above the marker has no opening fence")
    return "".join(line + "\n" for line in lines[j + 1:i])


def parse(path: Path, text: str | None = None) -> list[Block]:
    """The managed blocks of one Markdown file, in order; a broken marker is a MarkupError naming its line."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith(MARKER):
            if lines[i].strip() == END:
                raise MarkupError(f"{path}:{i + 1}: {END} without a marker above it")
            i += 1
            continue
        start = i
        head = lines[i][len(MARKER):]
        option_lines: list[str] = []
        if "-->" in head:
            command = head.split("-->", 1)[0].strip()
        else:
            command = head.strip()
            i += 1
            while i < len(lines) and "-->" not in lines[i]:
                option_lines.append(lines[i])
                i += 1
            if i == len(lines):
                raise MarkupError(f"{path}:{start + 1}: marker not closed by -->")
            option_lines.append(lines[i].split("-->", 1)[0])
        if not command:
            raise MarkupError(f"{path}:{start + 1}: marker names no command")
        options: dict[str, str] = {}
        for raw in option_lines:
            item = raw.strip()
            if not item:
                continue
            key, sep, value = item.partition(":")
            key, value = key.strip(), value.strip()
            if key in FLAGS and not sep:
                options[key] = ""
            elif key == "part" and sep and value:
                options[key] = options[key] + "\n" + value if key in options else value
            elif key in VALUED and sep and value:
                options[key] = value
            else:
                raise MarkupError(f"{path}:{start + 1}: unknown marker option {item!r} "
                                  f"(flags: {', '.join(sorted(FLAGS))}; with a value: {', '.join(sorted(VALUED))})")
        if "stdin" in options and options["stdin"] != "above":
            raise MarkupError(f"{path}:{start + 1}: stdin: takes 'above' (the fenced block above the marker)")
        for key in ("exit", "head"):
            if key in options and not options[key].isdigit():
                raise MarkupError(f"{path}:{start + 1}: {key}: takes a whole number, not {options[key]!r}")
        patterns = [(key, options[key]) for key in ("from", "until", "lines") if key in options]
        patterns += [("part", p.strip()) for part in options.get("part", "").split("\n") if part
                     for p in part.split(" .. ")]
        for key, pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise MarkupError(f"{path}:{start + 1}: {key}: is not a regular expression ({exc})") from None
        stdin = _previous_fenced(lines, start, path) if "stdin" in options else None
        marker_end = i
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i < len(lines) and _fence_of(lines[i]) is not None:
            fence_line, mark = lines[i], _fence_of(lines[i])
            body_start = i + 1
            j = body_start
            while j < len(lines) and lines[j].strip() != mark:
                j += 1
            if j == len(lines):
                raise MarkupError(f"{path}:{i + 1}: fenced block not closed")
            body = lines[body_start:j]
            k = j + 1
            while k < len(lines) and not lines[k].strip():
                k += 1
        else:  # Markdown written as it is printed (a benchmark's table): everything up to the closing comment
            fence_line, body_start = "", marker_end + 1
            k = body_start
            while k < len(lines) and lines[k].strip() != END and not lines[k].startswith(MARKER):
                k += 1
            j = k
            body = _trimmed(lines[body_start:j])
        if k == len(lines) or lines[k].strip() != END:
            raise MarkupError(f"{path}:{start + 1}: the block of this marker is not followed by {END}")
        rank = sum(b.command == command for b in blocks)
        blocks.append(Block(path, start + 1, command, options, fence_line, body, body_start, j, stdin, rank))
        i = k + 1
    return blocks


#: Lines that only a program's output has: rich's table borders, nodecast's notes and errors, a shell prompt.
_OUTPUT_LINE = re.compile(r"[┏┃│└]|^\s*note: |^nodecast: error: |^\$ |^python benchmarks/")


def unmanaged(path: Path, text: str | None = None) -> list[int]:
    """Lines of fenced blocks that look like program output but no marker manages: where drift would come back.

    A block of output that cannot be regenerated (a run of code that no longer exists, a machine that is
    not at hand) says so on the line above its fence: ``<!-- output-by-hand: WHY -->``."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).split("\n")
    managed = {b.body_start for b in parse(path, "\n".join(lines))}
    found: list[int] = []
    after_code = False
    i = 0
    while i < len(lines):
        mark = _fence_of(lines[i])
        if mark is None:
            i += 1
            continue
        lang = lines[i].strip()[len(mark):].strip()
        j = i + 1
        while j < len(lines) and lines[j].strip() != mark:
            j += 1
        above = next((lines[n].strip() for n in range(i - 1, -1, -1) if lines[n].strip()), "")
        looks = after_code or any(_OUTPUT_LINE.search(line) for line in lines[i + 1:j])
        if lang in ("", "text", "console") and looks and i + 1 not in managed \
                and not above.startswith("<!-- output-by-hand:"):
            found.append(i + 1)
        # A plain block right after a Python snippet is what the snippet printed.
        after_code = lang == "python"
        i = j + 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i < len(lines) and _fence_of(lines[i]) is None:
            after_code = False
    return found


def _trimmed(lines: list[str]) -> list[str]:
    """The lines without the empty ones at either end (a raw block is written with one empty line around it)."""
    first = next((n for n, line in enumerate(lines) if line.strip()), len(lines))
    last = next((n for n in range(len(lines), 0, -1) if lines[n - 1].strip()), 0)
    return lines[first:last]


def documents(root: Path = ROOT) -> list[Path]:
    """README.md and docs/*.md: the files whose blocks this script manages."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def environment() -> dict[str, str]:
    """The environment every command runs in: the same output on every machine (see the module docstring)."""
    env = dict(os.environ)
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TERM", "NODECAST_INPUT_LIMIT", "NODECAST_FIFO_WAIT"):
        env.pop(name, None)
    env.update(NO_COLOR="1", COLUMNS="160", LINES="50", PYTHONUNBUFFERED="1", TZ="UTC", LC_ALL="C.UTF-8",
               PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""))
    return env


def normalise(text: str, *folders: Path) -> list[str]:
    """The output's lines as the documentation shows them: trailing spaces and empty last lines gone, and
    absolute paths of the given folders written as a reader types them (see the module docstring)."""
    for folder, shown in folders_shown(folders):
        text = text.replace(str(folder) + "/", shown)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def folders_shown(folders: Iterable[Path]) -> list[tuple[Path, str]]:
    """(absolute folder, what replaces it) pairs, longest path first so that a folder inside another wins."""
    pairs = []
    for folder in folders:
        shown = "../shared/" if folder == SHARED else ""
        pairs.append((folder, shown))
        if folder.resolve() != folder:
            pairs.append((folder.resolve(), shown))
    # An installed (not editable) nodecast names its own files in site-packages: shown as the source tree's.
    spec = importlib.util.find_spec("nodecast")
    if spec is not None and spec.origin is not None:
        package = Path(spec.origin).resolve().parent
        if package != (ROOT / "src" / "nodecast").resolve():
            pairs.append((package, "src/nodecast/"))
    return sorted(pairs, key=lambda pair: -len(str(pair[0])))


def select(output: list[str], options: dict[str, str], gap: str | None = "...") -> list[str]:
    """Apply ``part:``, ``from:``, ``until:``, ``lines:`` then ``head:``: the excerpt a block shows.

    Each run of left-out lines becomes one ``gap`` line; a raw Markdown block passes None (an ellipsis would be
    read as text there), and its left-out lines are simply left out."""
    if "part" in options:
        kept, at = [], 0
        for part in options["part"].split("\n"):
            first, _, last = (x.strip() for x in part.partition(" .. "))
            begin = next((i for i in range(at, len(output)) if re.search(first, output[i])), None)
            if begin is None:
                raise ValueError(f"no line of the output after the previous part matches part: {first}")
            end = begin + 1
            if last:
                end = next((i for i in range(begin + 1, len(output)) if re.search(last, output[i])), None)
                if end is None:
                    raise ValueError(f"no line of the output after part: {first} matches {last}")
            if begin > at:
                kept.append(gap)
            kept += output[begin:end]
            at = end
        output = kept + ([gap] if at < len(output) else [])
    if "from" in options:
        pattern = re.compile(options["from"])
        first = next((i for i, line in enumerate(output) if pattern.search(line)), None)
        if first is None:
            raise ValueError(f"no line of the output matches from: {options['from']}")
        output = ([gap] if first else []) + output[first:]
    if "until" in options:
        pattern = re.compile(options["until"])
        stop = next((i for i, line in enumerate(output) if pattern.search(line)), None)
        if stop is None:
            raise ValueError(f"no line of the output matches until: {options['until']}")
        output = output[:stop] + [gap]
    if "lines" in options:
        pattern = re.compile(options["lines"])
        kept: list[str] = []
        for line in output:
            if pattern.search(line):
                kept.append(line)
            elif not kept or kept[-1] != gap:
                kept.append(gap)
        output = kept
    if "head" in options and len(output) > int(options["head"]):
        output = output[:int(options["head"])] + [gap]
    return [line for line in output if line is not None]


#: What each command printed, by (command, standard input, scratch): a command shown in several blocks runs once.
_RUNS: dict[tuple[str, str, bool], tuple[int, list[str]]] = {}
_RUNS_LOCK = threading.Lock()


def execute(block: Block) -> tuple[int, list[str]]:
    """Run the block's command as the module docstring says (once per command, input and folder kind); its exit
    status and its normalised output lines, before the block's excerpt options."""
    key = (block.command, block.stdin or "", "scratch" in block.options)
    with _RUNS_LOCK:
        if key in _RUNS:
            return _RUNS[key]
    with tempfile.TemporaryDirectory(prefix="nodecast-docs-") as tmp:
        cwd = ROOT
        folders = [ROOT, SHARED]
        if "scratch" in block.options:
            # ../shared must resolve from the scratch folder as from the repository root.
            cwd = Path(tmp) / "work"
            cwd.mkdir()
            if SHARED.is_dir():
                (Path(tmp) / "shared").symlink_to(SHARED)
            folders.append(cwd)
        proc = subprocess.run(["bash", "-c", block.command], cwd=cwd, env=environment(), input=block.stdin or "",
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                              timeout=TIMEOUT_S, check=False)
        result = proc.returncode, normalise(proc.stdout, *folders)
    with _RUNS_LOCK:
        _RUNS[key] = result
    return result


def prefetch(blocks: Iterable[Block], jobs: int) -> None:
    """Run the commands of these blocks ``jobs`` at a time (each is its own process), so that refresh finds them
    done; a failure is left for refresh to report."""
    todo = [b for b in blocks if not (b.needs_shared and not SHARED.is_dir())]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(execute, b) for b in todo]:
            try:
                future.result()
            except subprocess.TimeoutExpired:
                pass


def run(block: Block) -> tuple[int, list[str]]:
    """The block's exit status and the lines it shows: the command's output, excerpted as its options say."""
    code, output = execute(block)
    output = select(output, block.options, "..." if block.fence else None)
    if "prompt" in block.options:
        output = [f"$ {block.command}", *output]
    return code, output


def masked(lines: Iterable[str]) -> list[str]:
    """A measured block's layout: every number as '#', runs of spaces as one (column widths follow the numbers)."""
    return [" ".join(_NUMBER.sub("#", line).split()) for line in lines]


def refresh(block: Block, *, measure: bool = False) -> Outcome:
    """Rerun one block and say whether its text would change; skipped blocks say why."""
    if block.needs_shared and not SHARED.is_dir():
        return Outcome(block, "skipped", reason=f"{SHARED} is absent (the shared data lives beside the repository)")
    if block.measured and not measure:
        return Outcome(block, "skipped", reason="measured (a benchmark's timings): rerun with --measure")
    try:
        code, output = run(block)
    except subprocess.TimeoutExpired:
        return Outcome(block, "failed", reason=f"no end after {TIMEOUT_S} s")
    except ValueError as exc:
        return Outcome(block, "failed", reason=str(exc))
    if code != block.expected_exit:
        tail = "\n".join(output[-5:])
        return Outcome(block, "failed", reason=f"exit status {code}, the marker expects {block.expected_exit}:\n{tail}")
    same = masked(output) == masked(block.body) if block.measured else output == block.body
    return Outcome(block, "same" if same else "changed", body=output)


def write(path: Path, outcomes: Sequence[Outcome]) -> list[str]:
    """Put the new bodies of one file's changed blocks in place; the blocks it could not place, said why.

    The file is read again first, so an edit made while the commands ran is kept: each block is found anew
    by its command and its rank among the blocks of that command, and replaced bottom up."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    now = {(block.command, block.rank): block for block in parse(path, text)}
    placed: list[tuple[Block, list[str]]] = []
    lost: list[str] = []
    for outcome in outcomes:
        if outcome.status != "changed" or outcome.body is None:
            continue
        target = now.get((outcome.block.command, outcome.block.rank))
        if target is None:
            lost.append(f"{outcome.block.where}: not written: the block was removed while its command ran")
        else:
            placed.append((target, outcome.body))
    for target, body in sorted(placed, key=lambda pair: -pair[0].body_start):
        lines[target.body_start:target.body_end] = body if target.fence else ["", *body, ""]
    text = "\n".join(lines)
    tmp = path.with_name(f".{path.name}.update-outputs.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return lost


def diff(outcome: Outcome, limit: int = 40) -> str:
    """The first lines of a unified diff between what a block shows and what its command prints now."""
    lines = list(difflib.unified_diff(outcome.block.body, outcome.body or [], "shown", "printed now", lineterm="", n=1))
    more = f"\n    ... ({len(lines) - limit} more diff lines)" if len(lines) > limit else ""
    return "\n".join("    " + line for line in lines[:limit]) + more


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="The marker convention and the normalisation rule: this file's docstring.")
    parser.add_argument("files", nargs="*", type=Path, help="Markdown files (default: README.md and docs/*.md)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block differs or fails")
    parser.add_argument("--fast", action="store_true", help="leave out the blocks marked slow (and measured)")
    parser.add_argument("--measure", action="store_true", help="also rerun the blocks marked measured (benchmarks)")
    parser.add_argument("--only", metavar="TEXT", help="only the blocks whose command contains TEXT")
    parser.add_argument("--list", action="store_true", help="list the managed blocks and run nothing")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="commands run at once (default: one per CPU)")
    args = parser.parse_args(argv)

    paths = [p.resolve() for p in args.files] or documents()
    blocks = [b for p in paths for b in parse(p)]
    if args.only:
        blocks = [b for b in blocks if args.only in b.command]
    stray = [f"{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}:{n}" for p in paths for n in unmanaged(p)]
    if args.list:
        for b in blocks:
            flags = ", ".join(k if not v else f"{k}: {v}".replace("\n", f"; {k}: ") for k, v in b.options.items())
            print(f"{b.where}: {b.command}" + (f"  [{flags}]" if flags else ""))
        return 0
    chosen = [b for b in blocks if not (args.fast and b.slow) and (args.measure or not b.measured)]
    # Measured blocks time themselves: they run alone, after the others.
    prefetch([b for b in chosen if not b.measured], args.jobs)
    outcomes: list[Outcome] = []
    for block in blocks:
        if args.fast and block.slow:
            outcome = Outcome(block, "skipped", reason="slow (--fast)")
        else:
            outcome = refresh(block, measure=args.measure)
        outcomes.append(outcome)
        word = {"same": "current", "changed": "differs" if args.check else "updated",
                "failed": "FAILED", "skipped": "skipped"}[outcome.status]
        print(f"{block.where}: {word}: {block.command}" + (f"\n    {outcome.reason}" if outcome.reason else ""),
              flush=True)
        if args.check and outcome.status == "changed":
            print(diff(outcome), flush=True)
    lost: list[str] = []
    if not args.check:
        for path in paths:
            mine = [o for o in outcomes if o.block.path == path and o.status == "changed"]
            if mine:
                lost += write(path, mine)
    for line in lost:
        print(line)
    for where in stray:
        print(f"{where}: output that no marker manages: mark it (see {Path(__file__).name}), "
              "or say why it cannot be regenerated with <!-- output-by-hand: WHY --> above it")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("same", "changed", "failed", "skipped")}
    print(f"{len(outcomes)} blocks: {counts['same']} current, {counts['changed']} "
          f"{'differ' if args.check else 'updated'}, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] or lost or (args.check and (counts["changed"] or stray)) else 0


if __name__ == "__main__":
    sys.exit(main())
