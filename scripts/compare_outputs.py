"""Prove that a change left nodecast's output as it was: the same commands on REV and on this checkout, compared.

A refactor (modules moved between packages, code reorganised) must change no
number, no line and no file the commands write. This script checks it the
only way that does not trust the code under test: it runs one list of
``nodecast`` command lines twice, once with the code of a git revision (the
*base*, default ``HEAD``) and once with this checkout as it is on disk, edits
not yet committed included (the *head*), and compares what each wrote: every
output file byte for byte, standard output, standard error and the exit code.

Usage (from anywhere; the commands run from each side's repository root)::

    python scripts/compare_outputs.py                      # HEAD against the working tree, 2 commands at a time
    python scripts/compare_outputs.py --base main~3        # any revision git understands
    python scripts/compare_outputs.py --only simulate      # the invocations whose name holds a text (repeatable)
    python scripts/compare_outputs.py --list               # the invocations, nothing run
    python scripts/compare_outputs.py --keep /tmp/cmp      # keep both sides' outputs (DIR must be new or empty)
    python scripts/compare_outputs.py --shared ../shared --jobs 2 --timeout 300

Exit status: 0 when every invocation gave identical output on both sides; 1
when one differs, or failed (an exit code other than expected, a timeout) on
either side; 2 when the comparison could not be set up (an unknown revision,
a side whose ``nodecast`` does not import). A failed command is reported with
the last lines of its standard error, never as a traceback of this script.

How the two sides run
---------------------
The base is a ``git worktree add --detach`` of REV in a temporary folder,
removed at the end (``git worktree remove --force``); that is the only write
to the repository, and it touches neither its index nor its working tree. Both
sides run ``python -c BOOT ARGS`` with the Python running this script
(``sys.executable``; nodecast's dependencies must import there), where BOOT
puts the side's ``src`` first on ``sys.path``, imports ``nodecast``, checks
that ``nodecast.__file__`` lies under that ``src`` (exit 97 and a message
otherwise: the editable install of /work/venv points at this checkout, and a
base run that silently imported the head's code would prove nothing), and runs
the ``nodecast`` module as the console script does (``runpy``, so the command
line is what ``nodecast ARGS`` runs). Before the list, each side is probed
once (``nodecast.cli`` and every ``nodecast.commands.*`` module imported)
and the file nodecast came from is printed; a tree broken mid-refactor stops
the comparison there (exit 2), with the import error.
``PYTHONPATH`` is the side's ``src`` too, so that a child Python process
(a Dask worker) imports the same code. The working folder is the side's
repository root; every input is given as an absolute path. ``--jobs``
commands run at once (each side's run of an invocation is one command); the
invocations that start a local Dask cluster (``--jobs 2``) run afterwards,
one command at a time, since their worker processes take the cores.

Environment, the same on both sides, so that a difference is the code's:
``PYTHONHASHSEED=0`` (set iteration order), ``TZ=UTC``, ``LC_ALL=C.UTF-8``,
``NO_COLOR=1``, ``COLUMNS=160``, ``LINES=50`` (rich's tables, as
docs/update_outputs.py prints them), ``MPLBACKEND=Agg``, a matplotlibrc with
``svg.hashsalt`` fixed and ``SOURCE_DATE_EPOCH=0`` (an SVG's element ids and
date: random and the clock otherwise), and, per side, its own
``PYTHONPYCACHEPREFIX`` and ``NUMBA_CACHE_DIR`` in the temporary folder (no
bytecode or compiled-replay cache of one side is read by the other, and none
is written into either checkout). The caller's other ``PYTHON*``,
``NODECAST*`` (``NODECAST_KERNEL_MODEL``, ``NODECAST_STARPU_DIR``...),
``NUMBA*``, ``MPL*`` and ``ARROW*`` variables are dropped.

What is covered
---------------
Every workflow that writes JSON or CSV, on the shared data (``--shared``:
``data/traces``, ``data/starpu``, ``data/kernel-zoo``; default ``../shared``
beside the repository) and on three op tables this script writes first
(``inputs/bmm/``: NeuSight's measured FP32 bmm latencies of the same 12
shapes on a Tesla T4, a V100 and a P100, copied into the script from
``data/cross-gpu/neusight-train/bmm.parquet``). The command lines are those of
README.md, docs/*.md and benchmarks/bench_forecast_memory.py where those give
one, with the machine-readable output flags added; small traces are
preferred. ``invocations()`` is the list, one name each (``--list`` prints
it; ``--only`` picks by name):

- replay: nsys (every output: ``--json``, ``--trace``, ``-o`` CSV, ``--notes
  all``), nvprof, Kineto (``--copy-engines 1``; the 1.4 MB training trace),
  nvprof GPU-trace CSV.
- forecast: nsys kmeans onto one node (``--json``, ``-o``, ``--table``,
  ``--trace``, ``--notes all``) and onto two with ``--sweep link.gen=3,4,5``
  (chart as SVG); nsys heat onto ``h100-sxm,h200`` (README), the benchmark's
  command (``-o OPS.parquet``) and four targets on a local Dask cluster
  (``--jobs 2``: worker processes import the side's code through
  ``PYTHONPATH``); nsys Gaussian, unified-memory softmax, sptrsv, tomo with two
  ``--sweep`` (``gpu.count``, ``cpu.mem_gbps``); nvprof LAMMPS, nvprof MXNet
  onto a composed node ``a100-sxm4-40gb@epyc-7742-2s`` with ``--host-scale``,
  ``--launch-us``, ``--copy-engines``, ``--top``; Kineto AlexNet onto three
  targets; Kineto training with the 12 Nsight Compute CSVs as ``--metrics``;
  nvprof CSV with ``--host-memory pinned``; an op table; a packaged sample
  with ``--models ahead --one-byte-us all=2.5``.
- project: the docs' command lines (nvprof streams with two models, nvprof
  CSV, nsys Gaussian), Kineto training with ``--metrics``, an op table, and
  the docs' refused one (Gaussian ``--from dgx-a100``: exit 2, its message
  compared).
- evaluate: the packaged AHEAD pairs (pinned, pageable, and the refused
  pinned/pageable one: exit 2), the Kineto pairs across GPUs (nsfw
  H100/MI300X with ``--notes all``; training V100/A100), two nsys runs of one
  program, two code variants, two op tables (paired by shape), the docs'
  kernel-zoo folders (Titan/Tesla-K20, paired by file name, three kernel
  models).
- kernels: the 12 ncu CSVs V100 -> H100 (``--json``, ``-o``), -> RTX 4090
  ``--per-launch``, ``--target-metrics`` (MAPE), ``--print-ncu-command``;
  roofline: one kernel as SVG (byte-stable with the fixed hash salt and
  date); fit-kernels: the three op tables (``-o`` parameter file, ``--json``).
- simulate: Cholesky on StarPU's attila calibration (``--trace``,
  ``--json``; the docs' command), an LU size x scheduler sweep (``--csv``), a
  Cholesky sweep on a local Dask cluster (``--jobs 2``), Cholesky on a
  nodecast machine with ``--roofline-missing``, the what-ifs (``--gpus``,
  ``--gpu-memory``, ``--bandwidth-scale``, ``--workers all``, dmdas),
  ``--kernel-times normal --seed``, the ``random`` scheduler, and the
  StarPU+SimGrid reference comparison (``--compare-reference`` attila,
  ``--max-blocks 20``, four schedulers: 32 rows, ``--jobs 2`` on Dask).
- the cheap rest: ``inspect --json`` (nvprof, Kineto), ``convert`` to CSV
  and Parquet, ``curves --csv`` (and SVG), ``machines list/show/diff
  --json``, ``models``.

Left out: HTML pages and PNG figures (not byte-stable), ``calibrate`` and
``record`` (need a GPU), ``fit-kernels`` on the full corpora and the whole
StarPU reference (minutes each).

Normalisations (applied to both sides alike, before comparing; nothing else)
---------------------------------------------------------------------------
1. Paths of the two sides. Each side's output folder (``.../base/outputs``,
   ``.../head/outputs``) is written ``<OUT>``, and its repository root (the
   worktree, this checkout) ``<REPO>``: the commands print and record the
   files they wrote (``wrote ...``, the fit's ``NODECAST_KERNEL_MODEL=...``
   hint, its JSON's ``output``), and ``machines show --json`` records the
   catalogue and data-sheet files it read, which lie in the side's ``src``.
   Inputs are the same absolute paths on both sides and are left as they
   are. (A side's path inside a rich table, padded to its width, would still
   differ; no covered command prints one.)
2. Wall-clock times of ``simulate --compare-reference``: it records how long
   each simulation took. The JSON keys ``wall_s``, ``nodecast_wall_s`` and
   ``simulated_s`` (the sum of those) and the CSV columns of those names
   become ``<wall-clock>``, and its summary line's ``X s of simulations, Y s
   wall`` becomes ``<wall-clock> s of simulations, <wall-clock> s wall``. The
   CSV is read and written back with the csv module for that, so its quoting
   is compared as the csv module writes it (only in files with such a column).
3. Wall-clock times of ``fit-kernels``: the numbers of its JSON
   ``"seconds": {"read": ..., "fit": ...}`` and the ``[2 m 10 s]`` that
   starts each of its log lines on stderr become ``<wall-clock>``.
4. Progress lines on stderr (``compared 12 of 48 runs, 10 s``), printed
   every 10 s of a long job when stderr is not a terminal: dropped (whether
   one is printed depends on the machine's speed).
5. Dask's ``UserWarning: Port 8787 is already in use ... Hosting the HTTP
   server on port N instead`` on stderr (four lines): dropped. Whether it is
   printed depends on what else runs on the machine (another cluster, of
   another user or of the other side), not on the code.

No version string or date appears in the covered outputs (both sides read
the one installed distribution's version); the SVG date is pinned by
``SOURCE_DATE_EPOCH`` instead of normalised.

Standard library only, and only nodecast's command line: no nodecast module
is imported here, so this script works while the package is being reorganised.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

#: The repository root (the head side): the folder above scripts/.
ROOT = Path(__file__).resolve().parents[1]

#: Exit status of BOOT when nodecast was imported from another tree than the side's (see the docstring).
WRONG_TREE = 97

#: Run by ``python -c`` on each side: import nodecast from COMPARE_OUTPUTS_SRC, check where it came from, then run
#: the ``nodecast`` module as the console script does. With COMPARE_OUTPUTS_PROBE set it imports the command line
#: and every command's module (``nodecast.commands.*``, which import most of the package) and prints the file
#: nodecast came from instead.
BOOT = r"""
import os, sys
src = os.path.realpath(os.environ["COMPARE_OUTPUTS_SRC"])
sys.path.insert(0, src)
import nodecast
where = os.path.realpath(nodecast.__file__)
if not where.startswith(src + os.sep):
    sys.stderr.write("compare_outputs: nodecast was imported from %s, not from %s\n" % (where, src))
    sys.exit(97)
if os.environ.get("COMPARE_OUTPUTS_PROBE"):
    import importlib, pkgutil
    import nodecast.cli
    try:
        import nodecast.commands as commands
    except ImportError:
        commands = None
    for info in pkgutil.iter_modules(commands.__path__ if commands else []):
        importlib.import_module("nodecast.commands." + info.name)
    print(where)
    sys.exit(0)
import runpy
sys.argv[0] = "nodecast"
runpy.run_module("nodecast", run_name="__main__", alter_sys=True)
"""

#: matplotlib's salt for an SVG's element ids (random per run when unset): both sides write the same ids.
SVG_HASH_SALT = "nodecast-compare-outputs"

#: JSON keys and CSV columns that hold wall-clock seconds (normalisation 2).
WALL_KEYS = ("wall_s", "nodecast_wall_s", "simulated_s")
WALL = "<wall-clock>"
_WALL_JSON = re.compile(r'("(?:%s)"\s*:\s*)(?:-?[0-9][0-9.eE+-]*|null|NaN)' % "|".join(WALL_KEYS))
_WALL_LINE = re.compile(r"[0-9][0-9.,]* s of simulations, [0-9][0-9.,]* s wall")
#: ``fit-kernels``' wall-clock seconds of reading and fitting: ``"seconds": {"read": 0.15, "fit": 0.05}``.
_SECONDS_JSON = re.compile(r'"seconds"\s*:\s*\{[^{}]*\}')
_NUMBER = re.compile(r"-?[0-9][0-9.eE+-]*")
#: ``fit-kernels``' log lines on stderr start with the time since it started: ``[2 m 10 s] reading 3 op table(s)``.
_ELAPSED_PREFIX = re.compile(r"^\[[0-9]+ [hms](?: [0-9]+ [hms])*\] ", re.M)
#: Dask's warning when another cluster holds its HTTP port (normalisation 5), with the lines it spans.
_DASK_PORT = re.compile(r"^.*distributed/node\.py:[0-9]+: UserWarning: Port [0-9]+ is already in use\.\n"
                        r"(?:Perhaps you already have a cluster running\?\n)?"
                        r"(?:Hosting the HTTP server on port [0-9]+ instead\n)?(?:  warnings\.warn\($\n)?", re.M)
#: ``job_progress``'s log line (normalisation 4): ``compared 12 of 48 runs, 2 m 10 s``.
_PROGRESS = re.compile(r"^[a-z][a-z ]* [0-9,]+ of [0-9,]+ [a-z-]+, (?:[0-9]+ h )?(?:[0-9]+ m )?[0-9]+ s\n", re.M)
#: Suffixes compared as text (decoded as UTF-8, normalised with the regular expressions); anything else is bytes.
TEXT_SUFFIXES = (".json", ".csv", ".svg", ".txt", ".stdout", ".stderr", ".toml", ".md")

#: Op tables (docs/inputs.md, "Op tables"), written into inputs/bmm/ under the names ``write_op_tables`` gives them:
#: NeuSight's measured FP32 bmm latencies (../shared/data/cross-gpu/neusight-train/bmm.parquet, ``Latency`` ms as
#: ``duration_s``), the same 12 shapes on three GPUs, spread over the range of work, with cuBLAS's kernel and grid.
OP_TABLES = {
    "Tesla_T4.csv": """\
device,op,dtype,batch,m,n,k,name,grid_x,grid_y,grid_z,block_x,block_y,block_z,duration_s
Tesla T4,bmm,fp32,5,125,4,2,volta_sgemm_32x128_nn,1,1,5,256,1,1,3.39200012e-05
Tesla T4,bmm,fp32,28,235,64,19,volta_sgemm_64x64_nn,1,4,28,64,1,1,3.64906676e-05
Tesla T4,bmm,fp32,65,162,510,5,volta_sgemm_64x64_nn,1,3,65,64,1,1,0.000279338658
Tesla T4,bmm,fp32,8,175,697,65,volta_sgemm_64x64_nn,2,3,8,64,1,1,0.000180096
Tesla T4,bmm,fp32,33,461,89,97,volta_sgemm_128x64_nn,1,8,33,128,1,1,0.000105461334
Tesla T4,bmm,fp32,257,1005,34,27,volta_sgemm_64x64_nn,1,16,257,64,1,1,0.000417429328
Tesla T4,bmm,fp32,800,657,93,9,volta_sgemm_64x64_nn,1,11,800,64,1,1,0.00244330661
Tesla T4,bmm,fp32,175,446,58,181,volta_sgemm_64x64_nn,3,7,175,64,1,1,0.000519391994
Tesla T4,bmm,fp32,323,477,58,174,volta_sgemm_64x64_nn,3,8,323,64,1,1,0.00115419734
Tesla T4,bmm,fp32,74,419,215,497,volta_sgemm_128x64_nn,4,7,74,128,1,1,0.00177204267
Tesla T4,bmm,fp32,180,66,863,889,volta_sgemm_128x32_nn,7,3,180,256,1,1,0.0107439785
Tesla T4,bmm,fp32,868,986,754,979,volta_sgemm_128x64_nn,8,16,868,128,1,1,0.423726735
""",
    "Tesla_V100-PCIE-32GB.csv": """\
device,op,dtype,batch,m,n,k,name,grid_x,grid_y,grid_z,block_x,block_y,block_z,duration_s
Tesla V100-PCIE-32GB,bmm,fp32,5,125,4,2,volta_sgemm_128x32_nn,1,4,5,256,1,1,4.80959999e-05
Tesla V100-PCIE-32GB,bmm,fp32,28,235,64,19,volta_sgemm_64x64_nn,1,4,28,64,1,1,4.82026674e-05
Tesla V100-PCIE-32GB,bmm,fp32,65,162,510,5,volta_sgemm_64x64_nn,1,3,65,64,1,1,0.000130175998
Tesla V100-PCIE-32GB,bmm,fp32,8,175,697,65,volta_sgemm_128x32_nn,1,6,8,256,1,1,6.90666636e-05
Tesla V100-PCIE-32GB,bmm,fp32,33,461,89,97,volta_sgemm_64x64_nn,2,8,33,64,1,1,7.59786641e-05
Tesla V100-PCIE-32GB,bmm,fp32,257,1005,34,27,volta_sgemm_32x128_nn,1,8,257,256,1,1,0.000169610664
Tesla V100-PCIE-32GB,bmm,fp32,800,657,93,9,volta_sgemm_32x128_nn,1,6,800,256,1,1,0.000473952005
Tesla V100-PCIE-32GB,bmm,fp32,175,446,58,181,volta_sgemm_64x64_nn,3,7,175,64,1,1,0.000228458673
Tesla V100-PCIE-32GB,bmm,fp32,323,477,58,174,volta_sgemm_32x128_nn,6,4,323,256,1,1,0.000427605331
Tesla V100-PCIE-32GB,bmm,fp32,74,419,215,497,volta_sgemm_64x64_nn,8,7,74,64,1,1,0.000631605327
Tesla V100-PCIE-32GB,bmm,fp32,180,66,863,889,volta_sgemm_64x64_nn,14,2,180,64,1,1,0.00297709862
Tesla V100-PCIE-32GB,bmm,fp32,868,986,754,979,volta_sgemm_32x128_nn,31,8,868,256,1,1,0.117690839
""",
    "Tesla_P100-PCIE-16GB.csv": """\
device,op,dtype,batch,m,n,k,name,grid_x,grid_y,grid_z,block_x,block_y,block_z,duration_s
Tesla P100-PCIE-16GB,bmm,fp32,5,125,4,2,maxwell_sgemm_128x64_nn,1,2,5,128,1,1,5.32586661e-05
Tesla P100-PCIE-16GB,bmm,fp32,28,235,64,19,maxwell_sgemm_128x64_nn,1,4,28,128,1,1,5.4026667e-05
Tesla P100-PCIE-16GB,bmm,fp32,65,162,510,5,maxwell_sgemm_128x64_nn,1,3,65,128,1,1,0.000247925336
Tesla P100-PCIE-16GB,bmm,fp32,8,175,697,65,maxwell_sgemm_128x64_nn,1,3,8,128,1,1,0.000139477332
Tesla P100-PCIE-16GB,bmm,fp32,33,461,89,97,maxwell_sgemm_128x64_nn,1,8,33,128,1,1,0.000100682666
Tesla P100-PCIE-16GB,bmm,fp32,257,1005,34,27,maxwell_sgemm_128x64_nn,1,16,257,128,1,1,0.000477791995
Tesla P100-PCIE-16GB,bmm,fp32,800,657,93,9,maxwell_sgemm_128x64_nn,1,11,800,128,1,1,0.00187202132
Tesla P100-PCIE-16GB,bmm,fp32,175,446,58,181,maxwell_sgemm_128x64_nn,2,7,175,128,1,1,0.000410112003
Tesla P100-PCIE-16GB,bmm,fp32,323,477,58,174,maxwell_sgemm_128x64_nn,2,8,323,128,1,1,0.000820874671
Tesla P100-PCIE-16GB,bmm,fp32,74,419,215,497,maxwell_sgemm_128x64_nn,4,7,74,128,1,1,0.000945994655
Tesla P100-PCIE-16GB,bmm,fp32,180,66,863,889,maxwell_sgemm_128x64_nn,7,2,180,128,1,1,0.00421118943
Tesla P100-PCIE-16GB,bmm,fp32,868,986,754,979,maxwell_sgemm_128x64_nn,8,16,868,128,1,1,0.163880651
""",
}


@dataclass(frozen=True)
class Invocation:
    """One command line: ``args`` after ``nodecast``, with ``{O}`` for the side's own output folder."""

    name: str
    args: tuple[str, ...]
    expect_rc: int = 0  # the exit status both sides must end with (2: a refused input, its message compared)
    #: Run with nothing else running (a local Dask cluster: its worker processes would fight the other commands for
    #: the cores, and two clusters at once for the dashboard's port).
    alone: bool = False

    def command(self) -> str:
        return "nodecast " + " ".join(self.args)


def write_inputs(inputs: Path) -> None:
    """The inputs no shared file gives as such: three op tables (module docstring), in ``inputs/bmm/``."""
    (inputs / "bmm").mkdir(parents=True, exist_ok=True)
    for name, text in OP_TABLES.items():
        (inputs / "bmm" / name).write_text(text, encoding="utf-8")


def invocations(shared: Path, inputs: Path) -> list[Invocation]:
    """The command lines compared (module docstring, "What is covered"); absolute input paths, ``{O}`` for outputs."""
    t = shared / "data" / "traces"
    starpu = shared / "data" / "starpu"
    zoo = shared / "data" / "kernel-zoo"
    # the 12 one-metric files of one run; the pattern itself where none is there (reported as a missing input)
    ncu = sorted(str(p) for p in t.glob("ncu-csv_v100_deepcam-pytorch-lamb-opt__*.csv")) or [
        f"{t}/ncu-csv_v100_deepcam-pytorch-lamb-opt__*.csv"]
    metrics = [a for p in ncu for a in ("--metrics", p)]
    kmeans = f"{t}/nsys_openacc-kmeans_rtx3080.sqlite"
    heat = f"{t}/nsys_omp-offload-heat-8000_t4_data-region.sqlite"
    gaussian = f"{t}/nsys_rodinia-gaussian-4096_rtx3090_baseline.sqlite"
    training_v100 = f"{t}/kineto_training-rank0_v100.json.gz"
    training_a100 = f"{t}/kineto_training-rank0_a100-80gb.json.gz"
    alexnet = f"{t}/kineto_alexnet-benchmark_a100.json.gz"
    nvcsv = f"{t}/nvprof-gputrace-csv_vectoradd_k40c.csv"
    bandwidthtest = "sample:nvprof_ahead-bandwidthtest-htod-{}"
    tables = {name: f"{inputs}/bmm/{name}" for name in OP_TABLES}
    t4_table, v100_table = tables["Tesla_T4.csv"], tables["Tesla_V100-PCIE-32GB.csv"]
    attila = ("--starpu-dir", f"{starpu}/sampling", "--starpu-machine", "attila")
    j, o = "{O}/result.json", "{O}/ops.csv"

    def inv(name: str, *args: str, expect_rc: int = 0) -> Invocation:
        return Invocation(name, tuple(args), expect_rc, alone="--jobs" in args)

    return [
        # replay: every trace format, every output
        inv("replay-nsys-vectoradd", "replay", f"{t}/nsys_vectoradd-streams_t4.sqlite", "--json", j,
            "--trace", "{O}/timeline.json", "-o", o, "--notes", "all"),
        inv("replay-nvprof-tensorflow", "replay", f"{t}/nvprof_tensorflow-cnn_gtx-titan-x.nvvp", "--json", j, "-o", o),
        inv("replay-kineto-alexnet", "replay", alexnet, "--json", j, "--copy-engines", "1"),
        inv("replay-kineto-training-a100", "replay", training_a100, "--json", j),
        inv("replay-nvprof-csv", "replay", nvcsv, "--json", j, "-o", o),
        # forecast: every trace format, one target and several, what-ifs, sweeps, metrics, Dask
        inv("forecast-nsys-kmeans", "forecast", kmeans, "--to", "a100-pcie-40gb", "--json", j, "-o", o,
            "--table", "{O}/categories.csv", "--trace", "{O}/timeline.json", "--notes", "all"),
        inv("forecast-nsys-kmeans-sweep", "forecast", kmeans, "--to", "a100-pcie-40gb,h100-pcie-80gb",
            "--sweep", "link.gen=3,4,5", "--json", j, "--table", "{O}/sweep.csv", "--png", "{O}/sweep.svg"),
        inv("forecast-nsys-heat-targets", "forecast", heat, "--to", "h100-sxm,h200", "--json", j,
            "--table", "{O}/targets.csv"),
        inv("forecast-nsys-heat-benchmark", "forecast", heat, "--to", "h100-sxm5-server", "--json", j,
            "-o", "{O}/ops.parquet"),
        inv("forecast-nsys-heat-4-targets-dask", "forecast",
            f"{t}/nsys_omp-offload-heat-8000_t4_map-every-step.sqlite",
            "--to", "h100-pcie-server,a100-pcie-40gb,l40s,rtx-4090", "--jobs", "2", "--json", j,
            "--table", "{O}/targets.csv"),
        inv("forecast-nsys-gaussian", "forecast", gaussian, "--to", "h100-sxm5-80gb", "--json", j, "-o", o),
        inv("forecast-nsys-unified-memory", "forecast", f"{t}/nsys_softmax-unified-memory_t4.sqlite",
            "--to", "a100-pcie-40gb", "--json", j, "--notes", "all"),
        inv("forecast-nsys-sptrsv", "forecast", f"{t}/nsys_sptrsv-levelset-la_t4.sqlite", "--to", "h100-pcie-server",
            "--json", j, "--table", "{O}/categories.csv"),
        inv("forecast-nsys-tomo-sweeps", "forecast", f"{t}/nsys_tomo-recon-stream_a100.sqlite",
            "--to", "h100-sxm5-server", "--sweep", "gpu.count=1,2", "--sweep", "cpu.mem_gbps=100,200",
            "--json", j, "--table", "{O}/sweep.csv"),
        inv("forecast-nvprof-lammps", "forecast", f"{t}/nvprof_ahead-lammps_summit-v100.nvvp",
            "--to", "h100-sxm5-server", "--json", j, "--table", "{O}/categories.csv"),
        inv("forecast-nvprof-mxnet-whatif", "forecast", f"{t}/nvprof_mxnet-cnn-inference_titan-v.nvvp",
            "--to", "a100-sxm4-40gb@epyc-7742-2s", "--host-scale", "0.5", "--launch-us", "4",
            "--copy-engines", "1", "--json", j, "-o", o, "--top", "5"),
        inv("forecast-kineto-alexnet-3-targets", "forecast", alexnet, "--to", "h100-sxm5-80gb,rtx-4090,mi300x",
            "--json", j, "--table", "{O}/targets.csv"),
        inv("forecast-kineto-training-metrics", "forecast", training_v100, "--to", "h100-sxm5-80gb", *metrics,
            "--json", j, "--table", "{O}/categories.csv"),
        inv("forecast-nvprof-csv-pinned", "forecast", nvcsv, "--to", "h100-pcie-server", "--host-memory", "pinned",
            "--json", j, "-o", o),
        inv("forecast-op-table", "forecast", t4_table, "--to", "v100-pcie-server", "--json", j, "-o", o,
            "--notes", "all"),
        inv("forecast-sample-ahead-one-byte", "forecast", bandwidthtest.format("pinned_titan-k20x"),
            "--from", "titan", "--to", "summit", "--models", "ahead", "--one-byte-us", "all=2.5", "--json", j),
        # project
        inv("project-nvprof-streams", "project", f"{t}/nvprof_vectoradd-streams-1M_t4.nvvp", "--from", "t4",
            "--to", "h100-pcie-server", "--models", "ahead,peak-bandwidth", "--json", j, "-o", o,
            "--summary", "{O}/summary.csv"),
        inv("project-nvprof-csv", "project", nvcsv, "--from", "tesla-k40", "--to", "h100-pcie-server",
            "--models", "ahead", "--json", j, "-o", o),
        inv("project-nsys-gaussian", "project", gaussian, "--to", "h100-sxm5-80gb", "--json", j,
            "--summary", "{O}/summary.csv"),
        inv("project-kineto-training-metrics", "project", training_v100, "--to", "h100-pcie-server", *metrics,
            "--json", j, "--summary", "{O}/summary.csv"),
        inv("project-op-table", "project", t4_table, "--to", "h100-pcie-server", "--json", j, "-o", o),
        inv("project-refused-gpu-mismatch", "project", gaussian, "--from", "dgx-a100", "--to", "h100-sxm5-80gb",
            "--json", j, expect_rc=2),
        # evaluate
        inv("evaluate-sample-pinned", "evaluate", bandwidthtest.format("pinned_titan-k20x"),
            bandwidthtest.format("pinned_summit-v100"), "--from", "titan", "--to", "summit",
            "--json", j, "-o", "{O}/pairs.csv", "--table", "{O}/wmape.csv"),
        inv("evaluate-sample-pageable", "evaluate", bandwidthtest.format("pageable_titan-k20x"),
            bandwidthtest.format("pageable_summit-v100"), "--from", "titan", "--to", "summit", "--json", j),
        inv("evaluate-refused-pinned-pageable", "evaluate", bandwidthtest.format("pinned_titan-k20x"),
            bandwidthtest.format("pageable_summit-v100"), "--from", "titan", "--to", "summit", "--json", j,
            expect_rc=2),
        inv("evaluate-kineto-nsfw", "evaluate", f"{t}/kineto_nsfw-image-detection_h100.json.gz",
            f"{t}/kineto_nsfw-image-detection_mi300x.json.gz", "--json", j, "--table", "{O}/wmape.csv",
            "--notes", "all"),
        inv("evaluate-kineto-training-v100-a100", "evaluate", training_v100, training_a100, "--json", j,
            "-o", "{O}/pairs.csv"),
        inv("evaluate-nsys-two-runs", "evaluate", heat, f"{t}/nsys_omp-offload-heat-8000_t4_data-region-run3.sqlite",
            "--json", j, "-o", "{O}/pairs.csv"),
        inv("evaluate-nsys-code-variants", "evaluate", gaussian,
            f"{t}/nsys_rodinia-gaussian-4096_rtx3090_block16.sqlite", "--json", j),
        inv("evaluate-op-tables", "evaluate", t4_table, v100_table, "--json", j, "-o", "{O}/pairs.csv",
            "--table", "{O}/wmape.csv"),
        inv("evaluate-zoo-folders", "evaluate", f"{zoo}/Titan", f"{zoo}/Tesla-K20",
            "--models", "default-kernel,dram-ratio,flops-ratio", "--json", j, "--table", "{O}/wmape.csv"),
        # kernels, roofline, fit-kernels
        inv("kernels-v100-h100", "kernels", *ncu, "--from", "v100-pcie-server", "--to", "h100-pcie-server",
            "--json", j, "-o", "{O}/launches.csv"),
        inv("kernels-v100-4090-per-launch", "kernels", *ncu, "--from", "v100-pcie-server", "--to", "rtx-4090",
            "--per-launch", "--json", j),
        inv("kernels-target-metrics", "kernels", *ncu, "--from", "v100-pcie-server", "--to", "v100-pcie-server",
            "--target-metrics", *ncu, "--json", j),
        inv("kernels-print-ncu-command", "kernels", "--print-ncu-command"),
        inv("roofline-lamb-stage1", "roofline", *ncu, "--from", "v100-pcie-server", "--to", "h100-pcie-server",
            "--kernel", "LAMBStage1", "-o", "{O}/roofline.svg"),
        inv("fit-kernels-op-tables", "fit-kernels", *tables.values(), "-o", "{O}/model.json",
            "--json", "{O}/scores.json"),
        # simulate
        inv("simulate-cholesky-attila", "simulate", "cholesky", "--size", "19200", *attila, "--scheduler", "dmda",
            "--trace", "{O}/chol.json", "--json", "{O}/chol-summary.json"),
        inv("simulate-lu-attila-sweep", "simulate", "lu", "--sizes", "9600,19200", *attila,
            "--scheduler", "dmda,eager,ws", "--json", j, "--csv", "{O}/sweep.csv"),
        inv("simulate-cholesky-sweep-dask", "simulate", "cholesky", "--sizes", "9600:38400:9600", *attila,
            "--scheduler", "dmda,heft", "--jobs", "2", "--json", j, "--csv", "{O}/sweep.csv"),
        inv("simulate-cholesky-h100-roofline", "simulate", "cholesky", "--size", "38400",
            "--machine", "h100-sxm5-server", "--roofline-missing", "--json", j),
        inv("simulate-attila-whatifs", "simulate", "cholesky", "--size", "19200", *attila, "--gpus", "2",
            "--gpu-memory", "2GB", "--bandwidth-scale", "0.5", "--workers", "all", "--scheduler", "dmdas",
            "--json", j, "--trace", "{O}/schedule.json"),
        inv("simulate-attila-normal-seed", "simulate", "lu", "--size", "9600", *attila, "--kernel-times", "normal",
            "--seed", "7", "--precision", "double", "--json", j),
        inv("simulate-attila-random", "simulate", "cholesky", "--size", "9600", *attila, "--scheduler", "random",
            "--seed", "3", "--no-prefetch", "--json", j),
        inv("simulate-reference-attila", "simulate", "--compare-reference", f"{starpu}/reference/attila.csv",
            "--starpu-dir", f"{starpu}/sampling", "--max-blocks", "20", "--scheduler", "dmda,dmdas,eager,lws",
            "--jobs", "2", "--json", j, "--csv", "{O}/comparison.csv"),
        # the cheap rest
        inv("inspect-nvprof-lammps", "inspect", f"{t}/nvprof_ahead-lammps_summit-v100.nvvp", "--json", j),
        inv("inspect-kineto-nsfw", "inspect", f"{t}/kineto_nsfw-image-detection_mi300x.json.gz", "--json", j),
        inv("convert-kineto-csv", "convert", alexnet, "-o", "{O}/trace.csv"),
        inv("convert-nsys-parquet", "convert", f"{t}/nsys_vectoradd-streams_t4.sqlite", "-o", "{O}/trace.parquet"),
        inv("curves-titan-summit-gh200", "curves", "--machines", "titan,summit,gh200", "--csv", "{O}/curves.csv",
            "-o", "{O}/curves.svg"),
        inv("machines-list", "machines", "list", "--json"),
        inv("machines-show-gh200", "machines", "show", "gh200", "--json"),
        inv("machines-diff-summit-h200", "machines", "diff", "summit", "h200-node", "--json"),
        inv("models", "models"),
    ]


# --- running ---------------------------------------------------------------------------------------------------


@dataclass
class Side:
    """One side of the comparison: the code it runs and where its outputs go."""

    label: str  # "base" or "head"
    root: Path  # the repository root (cwd of its commands)
    work: Path  # <run>/<label>: outputs/ and console/ below
    env: dict[str, str] = field(default_factory=dict)
    imported: str = ""  # nodecast.__file__ as the probe found it

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def outputs(self) -> Path:
        return self.work / "outputs"

    @property
    def console(self) -> Path:
        return self.work / "console"


@dataclass
class Run:
    """What one invocation did on one side."""

    rc: int | None  # None: it did not finish (timeout, could not start)
    stdout: bytes
    stderr: bytes
    seconds: float
    why: str = ""  # why rc is None


class Runner:
    """Runs command lines in their own process groups, so that a timeout or Ctrl-C stops a command's children too."""

    def __init__(self, python: str, timeout: float) -> None:
        self.python, self.timeout = python, timeout
        self._live: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self.stopping = False

    def run(self, side: Side, args: Sequence[str], extra_env: dict[str, str] | None = None) -> Run:
        env = dict(side.env, **(extra_env or {}))
        t0 = time.perf_counter()
        if self.stopping:
            return Run(None, b"", b"", 0.0, "not started: stopping")
        try:
            proc = subprocess.Popen([self.python, "-c", BOOT, *args], cwd=side.root, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:
            return Run(None, b"", str(exc).encode(), time.perf_counter() - t0, f"could not start: {exc}")
        with self._lock:
            self._live.add(proc)
        try:
            out, err = proc.communicate(timeout=self.timeout)
            return Run(proc.returncode, out, err, time.perf_counter() - t0)
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            return Run(None, out, err, time.perf_counter() - t0, f"timed out after {self.timeout:g} s")
        finally:
            with self._lock:
                self._live.discard(proc)

    def stop_all(self) -> None:
        self.stopping = True
        with self._lock:
            for proc in list(self._live):
                _kill(proc)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def side_env(side: Side, tmp: Path) -> dict[str, str]:
    """The environment of every command of ``side`` (module docstring, "Environment")."""
    dropped = ("PYTHON", "NODECAST", "NUMBA", "MPL", "ARROW", "COMPARE_OUTPUTS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped) and k not in ("COLUMNS", "LINES")}
    env.update({
        "COMPARE_OUTPUTS_SRC": str(side.src),
        "PYTHONPATH": str(side.src),
        "PYTHONHASHSEED": "0",
        "PYTHONPYCACHEPREFIX": str(tmp / "cache" / side.label / "pycache"),
        "NUMBA_CACHE_DIR": str(tmp / "cache" / side.label / "numba"),
        "TZ": "UTC",
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "COLUMNS": "160",
        "LINES": "50",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(tmp / "cache" / "matplotlib"),
        "SOURCE_DATE_EPOCH": "0",
    })
    return env


def probe(runner: Runner, side: Side) -> str | None:
    """Import the side's command line once; the file nodecast came from, or None (the error is printed)."""
    run = runner.run(side, [], {"COMPARE_OUTPUTS_PROBE": "1"})
    where = run.stdout.decode("utf-8", "replace").strip()
    if run.rc == 0 and where.startswith(str(side.src.resolve()) + os.sep):
        return where
    why = run.why or (f"exit {run.rc}" if run.rc != WRONG_TREE else "imported from the wrong tree")
    print(f"compare_outputs: the {side.label} side ({side.root}) cannot run nodecast ({why}):", file=sys.stderr)
    print(tail(run.stderr, 15) or where, file=sys.stderr)
    return None


def run_one(runner: Runner, side: Side, inv: Invocation) -> Run:
    """Run ``inv`` on ``side`` into its own output folder; keep its console streams beside the outputs."""
    out = side.outputs / inv.name
    out.mkdir(parents=True, exist_ok=True)
    args = [a.replace("{O}", str(out)) for a in inv.args]
    run = runner.run(side, args)
    side.console.mkdir(parents=True, exist_ok=True)
    (side.console / f"{inv.name}.stdout").write_bytes(run.stdout)
    (side.console / f"{inv.name}.stderr").write_bytes(run.stderr)
    (side.console / f"{inv.name}.exit").write_text(f"{run.rc if run.rc is not None else run.why}\n")
    return run


# --- comparing -------------------------------------------------------------------------------------------------


def path_replacements(side: Side) -> list[tuple[bytes, bytes]]:
    """Normalisation 1: the side's output folder -> ``<OUT>``, its repository root -> ``<REPO>`` (longest first)."""
    pairs: list[tuple[bytes, bytes]] = []
    for path, token in ((side.outputs, b"<OUT>"), (side.root, b"<REPO>")):
        for spelling in {str(path), str(path.resolve())}:
            pairs.append((spelling.encode(), token))
    return sorted(pairs, key=lambda p: -len(p[0]))


def normalise(data: bytes, name: str, side: Side) -> bytes:
    """What is compared of one file or stream of ``side`` (the module docstring's normalisations, nothing else)."""
    for old, new in path_replacements(side):
        data = data.replace(old, new)
    if not name.endswith(TEXT_SUFFIXES):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    if name.endswith((".json", ".stdout")):
        text = _WALL_JSON.sub(lambda m: m.group(1) + f'"{WALL}"', text)
        text = _SECONDS_JSON.sub(lambda m: _NUMBER.sub(f'"{WALL}"', m.group(0)), text)
    if name.endswith(".stdout"):
        text = _WALL_LINE.sub(f"{WALL} s of simulations, {WALL} s wall", text)
    if name.endswith(".stderr"):
        text = _ELAPSED_PREFIX.sub(f"[{WALL}] ", text)
        text = _PROGRESS.sub("", text)
        text = _DASK_PORT.sub("", text)
    if name.endswith(".csv"):
        text = _mask_csv_columns(text)
    return text.encode("utf-8")


def _mask_csv_columns(text: str) -> str:
    """Normalisation 2 in a CSV: the values of the ``WALL_KEYS`` columns (a file without one is left as it is)."""
    first = text.split("\n", 1)[0]
    if not any(key in first for key in WALL_KEYS):
        return text
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        return text
    masked = [i for i, col in enumerate(rows[0]) if col.strip() in WALL_KEYS]
    if not masked:
        return text
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(rows[0])
    for row in rows[1:]:
        writer.writerow([WALL if i in masked and cell != "" else cell for i, cell in enumerate(row)])
    return buf.getvalue()


def first_difference(a: bytes, b: bytes, name: str) -> str:
    """One line saying where ``a`` (base) and ``b`` (head) first differ: the first -/+ lines of a unified diff."""
    if not name.endswith(TEXT_SUFFIXES):
        return f"binary, {len(a):,} vs {len(b):,} B, first differing byte at {_first_mismatch(a, b):,}"
    try:
        la, lb = a.decode("utf-8").splitlines(), b.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return f"not UTF-8, first differing byte at {_first_mismatch(a, b):,}"
    minus = plus = None
    line = 0
    for d in difflib.unified_diff(la, lb, lineterm="", n=0):
        if d.startswith("@@"):
            if minus is not None or plus is not None:
                break
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)", d)
            # a pure insertion is "@@ -N,0 +M @@": N is the line before it, M the first inserted line
            line = (int(m.group(3)) if m.group(2) == "0" else int(m.group(1))) if m else 0
        elif d.startswith("-") and not d.startswith("---") and minus is None:
            minus = d[1:]
        elif d.startswith("+") and not d.startswith("+++") and plus is None:
            plus = d[1:]
    if minus is None and plus is None:  # the same lines, different line ends or a final newline
        return f"same lines, different bytes (line ends?) at byte {_first_mismatch(a, b):,}"
    return f"line {line}: -{_clip(minus, plus)} | +{_clip(plus, minus)}"


def _first_mismatch(a: Sequence, b: Sequence) -> int:
    """Index of the first element (byte, character) where ``a`` and ``b`` differ, or the shorter one's length."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _clip(text: str | None, other: str | None, width: int = 90) -> str:
    """``text`` cut to ``width`` characters around where it first differs from ``other`` (a long JSON line)."""
    if text is None:
        return "(nothing)"
    if len(text) <= width:
        return text
    at = _first_mismatch(text, other or "")
    start = max(0, min(at - width // 3, len(text) - width))
    return ("…" if start else "") + text[start:start + width] + ("…" if start + width < len(text) else "")


def tail(data: bytes, lines: int = 6) -> str:
    text = data.decode("utf-8", "replace").rstrip()
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class Verdict:
    """The comparison of one invocation."""

    inv: Invocation
    status: str  # "identical", "DIFFERENT", "FAILED", "SKIPPED"
    files: int = 0  # output files compared (console streams not counted)
    details: list[str] = field(default_factory=list)
    seconds: tuple[float, float] = (0.0, 0.0)


def compare(inv: Invocation, base: Side, head: Side, runs: dict[str, Run]) -> Verdict:
    """Compare the two sides' exit codes, console streams and output files of ``inv``."""
    seconds = (runs["base"].seconds, runs["head"].seconds)
    failed = []
    for side in (base, head):
        run = runs[side.label]
        if run.rc is None or run.rc != inv.expect_rc:
            what = run.why or f"exit {run.rc}, expected {inv.expect_rc}"
            failed.append(f"{side.label}: {what}\n" + _indent(tail(run.stderr) or tail(run.stdout)))
    if failed:
        return Verdict(inv, "FAILED", details=failed, seconds=seconds)
    details = []  # both exit codes are inv.expect_rc here
    for stream in ("stdout", "stderr"):
        a = normalise(getattr(runs["base"], stream), f"x.{stream}", base)
        b = normalise(getattr(runs["head"], stream), f"x.{stream}", head)
        if a != b:
            details.append(f"{stream}: {first_difference(a, b, f'x.{stream}')}")
    names = sorted({p.relative_to(side.outputs / inv.name).as_posix()
                    for side in (base, head) for p in (side.outputs / inv.name).rglob("*") if p.is_file()})
    for name in names:
        pa, pb = base.outputs / inv.name / name, head.outputs / inv.name / name
        if not pa.is_file() or not pb.is_file():
            details.append(f"{name}: only in {'head' if not pa.is_file() else 'base'}")
            continue
        a, b = normalise(pa.read_bytes(), name, base), normalise(pb.read_bytes(), name, head)
        if a != b:
            details.append(f"{name}: {first_difference(a, b, name)}")
    return Verdict(inv, "DIFFERENT" if details else "identical", len(names), details, seconds)


def _indent(text: str) -> str:
    return "\n".join("      " + line for line in text.splitlines())


# --- the whole run ---------------------------------------------------------------------------------------------


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


def missing_inputs(inv: Invocation, shared: Path, inputs: Path) -> list[str]:
    """Input paths of ``inv`` that do not exist (the invocation is skipped, saying which)."""
    roots = (str(shared), str(inputs))
    return [a for a in inv.args if a.startswith(roots) and not Path(a).exists()]


def report(verdicts: Sequence[Verdict], out: Callable[[str], None]) -> None:
    """The table: invocation, output files compared, seconds on each side, the verdict and why."""
    width = max(len(v.inv.name) for v in verdicts)
    out(f"{'invocation':<{width}}  files  base s  head s  result")
    for v in verdicts:
        out(f"{v.inv.name:<{width}}  {v.files:>5}  {v.seconds[0]:>6.1f}  {v.seconds[1]:>6.1f}  {v.status}")
        for d in v.details:
            out("    " + d)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="HEAD", metavar="REV", help="revision to compare against (default HEAD)")
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared",
                    help="the shared data folder (default: ../shared beside the repository)")
    ap.add_argument("--jobs", type=int, default=2, help="commands at once (default 2)")
    ap.add_argument("--only", action="append", default=[], metavar="SUBSTRING",
                    help="only the invocations whose name holds SUBSTRING (repeatable: any; --list lists them)")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="write inputs and both sides' outputs and console streams here and keep them (a new or "
                         "empty folder): DIR/{base,head}/{outputs,console}/")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one command may take (default 300)")
    ap.add_argument("--list", action="store_true", help="print the invocations and exit")
    args = ap.parse_args(argv)

    shared = args.shared.resolve()
    if not (shared / "data").is_dir():
        print(f"compare_outputs: {args.shared}: no data/ folder there; give the shared data with --shared",
              file=sys.stderr)
        return 2
    if args.keep is not None and args.keep.exists() and (not args.keep.is_dir() or any(args.keep.iterdir())):
        print(f"compare_outputs: --keep {args.keep}: exists and is not an empty folder; give a new one",
              file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("compare_outputs: --jobs must be 1 or more", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="compare-outputs-"))
    run_root = args.keep.resolve() if args.keep is not None else tmp / "run"
    inputs = run_root / "inputs"
    chosen = [inv for inv in invocations(shared, inputs)
              if not args.only or any(s in inv.name for s in args.only)]
    if args.list:
        for inv in chosen:
            print(f"{inv.name}: {inv.command()}")
        shutil.rmtree(tmp, ignore_errors=True)
        return 0
    if not chosen:
        print(f"compare_outputs: no invocation matches --only {' '.join(args.only)} (--list lists them)",
              file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        return 2

    rev = git("rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}")
    if rev.returncode != 0:
        print(f"compare_outputs: --base {args.base}: not a commit of {ROOT}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        return 2
    commit = rev.stdout.strip()
    # a stop by signal (SIGTERM from a batch system, SIGHUP) ends like Ctrl-C: the commands stopped, the worktree removed
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    worktree = tmp / "base-tree"
    runner = Runner(sys.executable, args.timeout)
    t_start = time.perf_counter()
    added = False
    try:
        add = git("worktree", "add", "--detach", "--quiet", str(worktree), commit)
        if add.returncode != 0:
            print(f"compare_outputs: git worktree add failed:\n{add.stderr.strip()}", file=sys.stderr)
            return 2
        added = True
        write_inputs(inputs)
        (tmp / "cache" / "matplotlib").mkdir(parents=True)
        (tmp / "cache" / "matplotlib" / "matplotlibrc").write_text(f"svg.hashsalt: {SVG_HASH_SALT}\n")
        base = Side("base", worktree, run_root / "base")
        head = Side("head", ROOT, run_root / "head")
        for side in (base, head):
            side.env = side_env(side, tmp)
        print(f"base: {args.base} = {commit[:12]} (worktree {worktree})")
        print(f"head: {ROOT} (working tree as it is on disk)")
        for side in (base, head):
            where = probe(runner, side)
            if where is None:
                return 2
            side.imported = where
            print(f"{side.label}: nodecast imported from {where}")
        print(f"{len(chosen)} invocations x 2 sides, {args.jobs} at a time; outputs in {run_root}", flush=True)

        verdicts: dict[str, Verdict] = {}
        runs: dict[str, dict[str, Run]] = {inv.name: {} for inv in chosen}
        todo = []
        for inv in chosen:
            missing = missing_inputs(inv, shared, inputs)
            if missing:
                verdicts[inv.name] = Verdict(inv, "SKIPPED", details=[f"missing input: {m}" for m in missing])
            else:
                todo += [(inv, base), (inv, head)]
        done = 0
        # the others args.jobs at a time, then those that must run alone one at a time
        for batch, jobs in (([t for t in todo if not t[0].alone], args.jobs), ([t for t in todo if t[0].alone], 1)):
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(run_one, runner, side, inv): (inv, side) for inv, side in batch}
                try:
                    for fut in as_completed(futures):
                        inv, side = futures[fut]
                        run = fut.result()
                        runs[inv.name][side.label] = run
                        done += 1
                        state = f"exit {run.rc}" if run.rc is not None else run.why
                        print(f"[{done:>3}/{len(todo)}] {side.label} {inv.name} {run.seconds:.1f} s, {state}",
                              file=sys.stderr, flush=True)
                        if len(runs[inv.name]) == 2:
                            verdicts[inv.name] = compare(inv, base, head, runs[inv.name])
                except KeyboardInterrupt:
                    runner.stop_all()
                    for fut in futures:
                        fut.cancel()
                    raise
        ordered = [verdicts[inv.name] for inv in chosen]
        print()
        report(ordered, print)
        counts = {s: sum(v.status == s for v in ordered) for s in ("identical", "DIFFERENT", "FAILED", "SKIPPED")}
        print(f"\n{counts['identical']} identical, {counts['DIFFERENT']} different, {counts['FAILED']} failed, "
              f"{counts['SKIPPED']} skipped; {time.perf_counter() - t_start:.0f} s wall")
        if args.keep is not None:
            print(f"outputs kept in {run_root}")
        return 0 if counts["DIFFERENT"] == 0 and counts["FAILED"] == 0 else 1
    except KeyboardInterrupt:
        print("compare_outputs: interrupted", file=sys.stderr)
        return 130
    finally:
        runner.stop_all()
        if added:
            removed = git("worktree", "remove", "--force", str(worktree))
            if removed.returncode != 0:
                print(f"compare_outputs: could not remove the worktree {worktree}: {removed.stderr.strip()} "
                      f"(its folder is deleted; 'git worktree prune' forgets it)", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
