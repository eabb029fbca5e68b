"""What each dependency costs a new user: installed size, import time, and the quick start's wall time.

Installs nodecast (this checkout, with the extras asked for) into a fresh
virtual environment, or measures an existing one (--venv), and prints, as
Markdown tables (docs/install.md holds them):

1. installed size per dependency of nodecast, each with the packages only it
   pulls in (sizes of the files its RECORD lists, compiled .pyc included;
   MB = 1e6 B); packages that several dependencies need are listed as shared;
   the rest of the folder (pip, setuptools, the interpreter's links) is the
   virtual environment's own;
2. import time per package (``python -X importtime``, self time summed over
   each package's modules, the smallest of --repeat runs) of ``nodecast
   --help`` and of the README's quick start: what a person waits for before
   the first line of output;
3. wall seconds of both commands: the first run (numba compiles the replay
   kernels into its cache then) and the best of --repeat.

Usage:
    python benchmarks/bench_install.py [--extras figures,parallel] [--repeat 5] [--keep DIR]
    python benchmarks/bench_install.py --venv DIR [--repeat 5]
    python benchmarks/bench_install.py --project OTHER_CHECKOUT   (an earlier version, to compare)

Creating the environment downloads the dependencies (minutes); nothing is
installed into the Python that runs this script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUICK_START = ["evaluate", "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x",
               "sample:nvprof_ahead-bandwidthtest-htod-pinned_summit-v100", "--from", "titan", "--to", "summit"]
MB = 1e6

# Run by the environment's own Python: every installed distribution with its size and requirements, and the
# distribution each top-level module belongs to. pip's vendored 'packaging' evaluates the markers (pip is in every
# environment that 'python -m venv' makes).
_INVENTORY = r"""
import importlib.metadata as md, json, os, sys
try:
    from pip._vendor.packaging.requirements import Requirement
except ImportError:
    from packaging.requirements import Requirement

def key(name):
    return name.lower().replace("_", "-").replace(".", "-")

dists = {}
for d in md.distributions():
    size = 0
    for f in d.files or []:
        try:
            size += os.lstat(f.locate()).st_size
        except OSError:
            pass
    reqs = []
    for text in d.requires or []:
        r = Requirement(text)
        reqs.append([key(r.name), sorted(r.extras), str(r.marker) if r.marker else None])
    dists[key(d.metadata["Name"])] = {"name": d.metadata["Name"], "version": d.version, "size": size, "requires": reqs}

def marker_ok(marker, extra):
    if marker is None:
        return True
    from pip._vendor.packaging.markers import Marker
    return Marker(marker).evaluate({"extra": extra})

# The closure of each (distribution, extras) pair: requirements whose marker holds with no extra or a chosen one.
def closure(name, extras):
    seen, todo = set(), [(name, tuple(extras))]
    while todo:
        n, ex = todo.pop()
        if (n, ex) in seen or n not in dists:
            continue
        seen.add((n, ex))
        for r, rex, marker in dists[n]["requires"]:
            if any(marker_ok(marker, e) for e in ("", *ex)):
                todo.append((r, tuple(rex)))
    return {n for n, _ in seen}

def extra_of(marker):
    # "" for a default requirement, the extra's name for one under 'extra == "NAME"'
    if marker is None or marker_ok(marker, ""):
        return ""
    return next((e for e in provided if marker_ok(marker, e)), None)

provided = md.metadata("nodecast").get_all("Provides-Extra") or []
reqs = dists["nodecast"]["requires"]
chosen = {e for e in sys.argv[1].split(",") if e}
grown = True
while grown:  # an extra that names others ('all' = 'nodecast[figures,parallel]')
    before = set(chosen)
    for r, rex, marker in reqs:
        if r == "nodecast" and extra_of(marker) in chosen:
            chosen |= set(rex)
    grown = chosen != before
direct = {}
for r, rex, marker in reqs:
    e = extra_of(marker)
    if r != "nodecast" and (e == "" or e in chosen) and r not in direct:
        direct[r] = (rex, e)
direct = [(r, rex, e) for r, (rex, e) in direct.items()]
out = {"dists": dists, "direct": [[r, extra, sorted(closure(r, rex))] for r, rex, extra in direct],
       "modules": {m: [key(x) for x in ds] for m, ds in md.packages_distributions().items()},
       "prefix": sys.prefix}
print(json.dumps(out))
"""


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


def make_venv(where: Path, extras: str, project: Path) -> tuple[Path, float]:
    """A fresh virtual environment at ``where`` with ``project`` installed (from a copy: no build files there), and
    the seconds pip took."""
    src = where / "src-copy"
    listed = run(["git", "-C", str(project), "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    files = [f for f in listed.stdout.split("\0") if f] if listed.returncode == 0 else None
    if files is None:
        shutil.copytree(project, src, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__"))
    else:
        for f in files:
            if (project / f).is_file():
                (src / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(project / f, src / f)
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    spec = f"{src}[{extras}]" if extras else str(src)
    t0 = time.perf_counter()
    proc = run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", spec])
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:  # pip's own warnings (an index it cannot read) are shown only when it fails
        raise SystemExit(f"pip install {spec} failed ({proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    shutil.rmtree(src)
    return venv, seconds


def folder_size(path: Path) -> tuple[int, int]:
    """(bytes in the files under ``path``, bytes of disk they and the folders take: what ``du -s`` counts)."""
    size = disk = 0
    for root, dirs, files in os.walk(path):
        for f in [*files, *dirs]:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            disk += st.st_blocks * 512
            if f in files:
                size += st.st_size
    return size, disk


def groups(inv: dict) -> list[tuple[str, str, list[str]]]:
    """The rows both tables share: (label, extra, package keys). Each dependency of nodecast with the packages only
    it pulls in, largest first; then the packages several of them need; then nodecast itself."""
    dists, direct = inv["dists"], inv["direct"]
    owners: dict[str, set[str]] = {}
    for name, _extra, members in direct:
        for m in members:
            owners.setdefault(m, set()).add(name)
    direct_names = {name for name, _, _ in direct}
    rows = []
    for name, extra, members in direct:
        own = [m for m in members if m != name and owners[m] == {name} and m not in direct_names and m in dists]
        rows.append((name, extra or "default", [name, *sorted(own, key=lambda m: -dists[m]["size"])]))
    rows.sort(key=lambda r: -sum(dists[m]["size"] for m in r[2]))
    counted = {m for r in rows for m in r[2]}
    shared = sorted((m for m in owners if m not in counted and m in dists and m != "nodecast"),
                    key=lambda m: -dists[m]["size"])
    if shared:
        rows.append(("shared by several", "", shared))
    rows.append(("nodecast", "", ["nodecast"]))
    return rows


def sizes_table(inv: dict, rows: list[tuple[str, str, list[str]]], venv: Path) -> list[str]:
    dists = inv["dists"]
    owners = {m: {n for n, _, ms in inv["direct"] if m in ms} for m in dists}
    lines = ["| dependency | extra | MB | with the packages only it needs (MB) | MB in all |", "|---|---|---:|---|---:|"]
    for label, extra, members in rows:
        total = sum(dists[m]["size"] for m in members)
        if label == "shared by several":
            listed = ", ".join(f"{dists[m]['name']} {dists[m]['size'] / MB:.1f} "
                               f"({'+'.join(sorted(dists[o]['name'] for o in owners[m]))})" for m in members)
            lines.append(f"| shared by several | | | {listed} | {total / MB:.1f} |")
        elif label == "nodecast":
            lines.append(f"| nodecast {dists['nodecast']['version']} | | | | {total / MB:.1f} |")
        else:
            head, own = members[0], members[1:]
            listed = ", ".join(f"{dists[m]['name']} {dists[m]['size'] / MB:.1f}" for m in own) or "-"
            lines.append(f"| {dists[head]['name']} {dists[head]['version']} | {extra} | {dists[head]['size'] / MB:.1f} "
                         f"| {listed} | {total / MB:.1f} |")
    counted = {m for _, _, ms in rows for m in ms}
    whole, disk = folder_size(venv)
    rest = whole - sum(d["size"] for k, d in dists.items() if k in counted)
    others = sorted(dists[k]["name"] for k in dists if k not in counted)
    lines.append(f"| the environment itself | | | {', '.join(others)}, the interpreter's links | {rest / MB:.1f} |")
    lines.append(f"| **whole environment** | | | on disk (`du -sh`): {disk / 2**20:.0f} MiB | **{whole / MB:.1f}** |")
    return lines


def import_times(python: str, argv: list[str], repeat: int, modules: dict[str, list[str]], cwd: Path) -> dict[str, float]:
    """Self import time per package (s; "" for the standard library), the smallest of ``repeat`` runs each;
    key "total": the smallest sum."""
    best: dict[str, float] = {}
    for _ in range(repeat):
        proc = run([python, "-X", "importtime", "-m", "nodecast", *argv], cwd=cwd)
        per: dict[str, float] = {}
        for line in proc.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s+(\S+)", line)
            if not m:
                continue
            owner = (modules.get(m.group(2).split(".")[0]) or [""])[0]
            per[owner] = per.get(owner, 0.0) + int(m.group(1)) * 1e-6
        per["total"] = sum(per.values())
        for k, v in per.items():
            best[k] = min(best.get(k, v), v)
    return best


def import_table(rows: list[tuple[str, str, list[str]]], help_t: dict[str, float], qs_t: dict[str, float]) -> list[str]:
    lines = ["| dependency (with the packages only it needs) | `nodecast --help` | quick start |", "|---|---:|---:|"]
    for label, _extra, members in [*rows, ("standard library", "", [""])]:
        lines.append(f"| {label} | {sum(help_t.get(m, 0) for m in members) * 1e3:.0f} | "
                     f"{sum(qs_t.get(m, 0) for m in members) * 1e3:.0f} |")
    lines.append(f"| **all imports** | **{help_t['total'] * 1e3:.0f}** | **{qs_t['total'] * 1e3:.0f}** |")
    return lines


def wall(cmd: list[str], repeat: int, cwd: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """((wall, CPU) seconds of the first run, the same of the best of ``repeat`` after it). CPU time (user + system
    of the child) is the steadier figure on a shared machine: waiting for a core does not count."""
    times = []
    for _ in range(repeat + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = run(cmd, cwd=cwd)
        elapsed = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return times[0], (min(t[0] for t in times[1:]), min(t[1] for t in times[1:]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, help="measure this environment (nodecast installed) instead of making one")
    ap.add_argument("--extras", default="", help="extras to install and count, comma-separated (e.g. figures,parallel)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per timing (default 5)")
    ap.add_argument("--keep", type=Path, help="make the environment in this folder and keep it")
    ap.add_argument("--project", type=Path, default=REPO, help="the nodecast source tree to install (default: this one)")
    args = ap.parse_args(argv)
    temp = None
    py = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    cwd = Path(tempfile.mkdtemp(prefix="nodecast-bench-cwd-"))  # the commands run in an empty folder
    try:
        if args.venv is not None:
            venv = args.venv.resolve()
            what = f"the environment {venv}"
        else:
            where = args.keep or Path(temp := tempfile.mkdtemp(prefix="nodecast-bench-install-"))
            where.mkdir(parents=True, exist_ok=True)
            venv, seconds = make_venv(where, args.extras, args.project.resolve())
            spec = f"'.[{args.extras}]'" if args.extras else "."
            what = f"a fresh virtual environment ({py}, python -m venv; pip install {spec}: {seconds:.0f} s)"
        python = str(venv / "bin" / "python")
        inv = json.loads(subprocess.run([python, "-c", _INVENTORY, args.extras], capture_output=True, text=True,
                                        check=True).stdout)
        rows = groups(inv)
        print(f"Installed size, MB (1 MB = 1e6 B, the files each package's RECORD lists), in {what}:")
        print()
        print("\n".join(sizes_table(inv, rows, venv)))
        print()
        exe = str(venv / "bin" / "nodecast")
        # NOTE: the wall times first: in a fresh environment the first run is the one that compiles numba's cache.
        h_first, h_best = wall([exe, "--help"], args.repeat, cwd)
        q_first, q_best = wall([exe, *QUICK_START], args.repeat, cwd)
        help_t = import_times(python, ["--help"], args.repeat, inv["modules"], cwd)
        qs_t = import_times(python, QUICK_START, args.repeat, inv["modules"], cwd)
        print(f"Import time, ms (python -X importtime: self time of each package's modules, best of {args.repeat}):")
        print()
        print("\n".join(import_table(rows, help_t, qs_t)))
        print()
        print(f"| seconds (wall / CPU) | first run | best of {args.repeat} |")
        print("|---|---:|---:|")
        print(f"| `nodecast --help` | {h_first[0]:.2f} / {h_first[1]:.2f} | {h_best[0]:.2f} / {h_best[1]:.2f} |")
        print(f"| quick start | {q_first[0]:.2f} / {q_first[1]:.2f} | {q_best[0]:.2f} / {q_best[1]:.2f} |")
        print()
        print(f"quick start: nodecast {' '.join(QUICK_START)}")
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
