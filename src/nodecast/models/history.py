"""Kernel durations: StarPU history-based models, sampling, and a hook for projected times.

Section 7 of Stanisic et al.: each task is replaced by a delay. By default the
delay is the *mean* duration StarPU measured for the kernel on that device and
data-size footprint (what StarPU's own simulation uses, and what its
schedulers use as the expected length). Optionally durations are *sampled*,
with a seeded generator so that runs stay reproducible:

``"normal"``
    from a normal law with the model's mean and standard deviation, redrawn
    when it falls at or below zero;
``"histogram"``
    from an irregular (equal-count) histogram of per-execution samples the
    user provides (section 7: irregular histograms capture the rare, much
    longer executions that regular bins smear out).

A kernel with no model for a device is an InputError naming it, unless a
*kernel-time provider* is given: any callable ``provider(query) -> seconds |
None`` (fixed times from ``--kernel-time``...), asked for what the StarPU
files' measurements do not cover, or a *fallback* of the same form, asked
last, after StarPU's regression (``nodecast.models.task_roofline``:
roofline-projected times).

In the registry these perfmodels are the ``starpu-history`` task-kernel model
(``StarpuHistoryModel``, role ``"history"``: ``nodecast.models.task_kernel``),
which holds the chain's fallbacks and scales.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.models.task_kernel import TASK_KERNEL, KernelQuery, KernelTimeProvider, TaskKernelRequest
from nodecast.traces.starpu_files import MAX_KERNEL_S, ArchModel, HistoryEntry, PerfModelFile, read_perfmodel
from nodecast.values import as_float, as_int

_SAMPLES_HINT = "Give a CSV with columns kernel,arch,size_bytes,duration_s (bytes, seconds)"

SAMPLING_MODES = ("mean", "normal", "histogram")


__all__ = ["SAMPLING_MODES", "IrregularHistogram", "KernelModels", "KernelQuery", "KernelTimeProvider",
           "StarpuHistoryModel", "load_samples_csv"]


class IrregularHistogram:
    """Equal-count (irregular-width) histogram of durations, sampled bin-then-uniform.

    Built from per-execution samples (s): bin edges are sample quantiles, so
    every bin holds the same number of executions and a sparse tail keeps its
    own wide bins instead of being merged into the bulk.
    """

    def __init__(self, samples_s: Sequence[float], nbins: int | None = None) -> None:
        data = np.sort(np.asarray(samples_s, dtype=float))
        if data.size == 0 or not np.all(np.isfinite(data)) or data[0] <= 0:
            msg = "an irregular histogram needs at least one finite sample > 0"
            raise ValueError(msg)
        if nbins is None:
            nbins = max(1, min(50, int(math.sqrt(data.size))))
        self.edges_s = np.quantile(data, np.linspace(0.0, 1.0, nbins + 1))
        self.mean_s = float(data.mean())

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` durations: a bin chosen uniformly (each holds 1/nbins of the mass), then uniform inside it."""
        k = rng.integers(0, len(self.edges_s) - 1, size=n)
        lo = self.edges_s[k]
        hi = self.edges_s[k + 1]
        return lo + (hi - lo) * rng.random(n)


def load_samples_csv(path: str | Path) -> dict[tuple[str, str, int], list[float]]:
    """Read per-execution samples: CSV with columns ``kernel,arch,size_bytes,duration_s``.

    ``arch`` is ``cuda0``, ``cuda1``..., or ``cpu``. Returns ``{(kernel, arch, size): [seconds]}``.
    A size that is not a whole number of bytes >= 0, or a duration outside
    (0, ``MAX_KERNEL_S``] s (NaN, inf), is an InputError naming column and line.
    """
    path = Path(path)
    out: dict[tuple[str, str, int], list[float]] = {}
    try:
        # Read whole, bounded, devices refused (nodecast.inputs): a line without end would be read forever.
        with io.StringIO(read_input(path, what="samples file").decode("utf-8"), newline="") as f:
            reader = csv.DictReader(f)
            need = {"kernel", "arch", "size_bytes", "duration_s"}
            if not reader.fieldnames or not need <= set(reader.fieldnames):
                raise InputError(f"needs columns {sorted(need)}", path=path, hint="See nodecast.models.history")
            for lineno, row in enumerate(reader, 2):
                where = f"line {lineno}"
                if any(row[c] is None for c in need):
                    raise InputError(f"{where}: the row has fewer fields than the header", path=path,
                                     hint=_SAMPLES_HINT)
                size = as_int(row["size_bytes"], path=path, field="size_bytes", row=where, ge=0, hint=_SAMPLES_HINT)
                value = as_float(row["duration_s"], path=path, field="duration_s", row=where, gt=0.0,
                                 le=MAX_KERNEL_S, hint=_SAMPLES_HINT)
                out.setdefault((row["kernel"], row["arch"], size), []).append(value)
    except OSError as exc:
        raise InputError(f"cannot read samples ({exc.strerror})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path, hint="Give a CSV with columns kernel,arch,size_bytes,duration_s") from None
    return out


class KernelModels:
    """Kernel durations for one machine's StarPU models (``<folder>/<kernel>.<machine>``).

    Args:
        folder: the ``codelets/45`` folder (None: only the provider answers).
        machine: the machine suffix of the model files (``attila``).
        provider: asked for kernels, devices or sizes the files do not cover.
        fallback: asked last, when neither the files (mean or StarPU's
            regression) nor ``provider`` answer: e.g. roofline-projected times
            (``nodecast.models.task_roofline``). Its ``label`` attribute, if any,
            goes into the notes with every time it gives.
        scale: a factor per query applied to every duration the files give
            (mean, regression, deviation, per-execution samples): e.g. the
            roofline ratio from the measured GPU to another
            (``nodecast.models.task_roofline.RooflineRatio``); its ``label``
            goes into the notes.
        mode: ``"mean"``, ``"normal"`` or ``"histogram"`` (see the module docstring).
        seed: seed of the sampling generator.
        samples: per-execution samples for ``"histogram"`` mode (``load_samples_csv``).

    Attributes:
        notes: human-readable remarks on substitutions made (a device model
            borrowed from another device, a regression used...), for reports.
    """

    def __init__(
        self,
        folder: str | Path | None,
        machine: str,
        *,
        provider: KernelTimeProvider | None = None,
        fallback: KernelTimeProvider | None = None,
        scale: Callable[[KernelQuery], float] | None = None,
        mode: str = "mean",
        seed: int = 0,
        samples: dict[tuple[str, str, int], list[float]] | None = None,
    ) -> None:
        if mode not in SAMPLING_MODES:
            raise InputError(f"sampling mode must be one of {SAMPLING_MODES} (got {mode!r})", key="--kernel-times")
        if mode == "histogram" and not samples:
            raise InputError("histogram sampling needs per-execution samples", key="--samples")
        self.folder = Path(folder) if folder is not None else None
        self.machine = machine
        self.provider = provider
        self.fallback = fallback
        self.scale = scale
        self._factors: dict[tuple[str, str, int, int], float] = {}
        self.mode = mode
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.samples = samples or {}
        self.notes: list[str] = []
        self._files: dict[str, PerfModelFile | None] = {}
        self._hists: dict[tuple[str, str, int], IrregularHistogram] = {}

    # ------------------------------------------------------------- lookup
    def model_file(self, kernel: str) -> PerfModelFile | None:
        """The parsed model file of ``kernel`` on this machine, or None when there is none."""
        if kernel not in self._files:
            pm = None
            if self.folder is not None:
                path = self.folder / f"{kernel}.{self.machine}"
                # lexists: a looping or broken symbolic link is reported by the reader, not taken for "no model".
                if os.path.lexists(path):
                    pm = read_perfmodel(path)
            self._files[kernel] = pm
        return self._files[kernel]

    def _arch_model(self, pm: PerfModelFile, kind: str, devid: int) -> ArchModel | None:
        same_kind = [a for a in pm.archs if a.kind == kind and a.impl == 0 and a.entries]
        for a in same_kind:
            if a.devid == devid:
                return a
        if same_kind:
            borrowed = same_kind[devid % len(same_kind)]
            note = f"{pm.symbol}: no model for {kind}{devid}, using {kind}{borrowed.devid}'s"
            if note not in self.notes:
                self.notes.append(note)
            return borrowed
        return None

    def expected_s(self, kernel: str, kind: str, devid: int, size_bytes: int, footprint: int | None = None, flops: float = 0.0) -> float:
        """Mean duration (s) of ``kernel`` on device ``kind``/``devid`` for this data size.

        Raises InputError naming the kernel when neither the model files nor the
        provider know it.
        """
        pm = self.model_file(kernel)
        entry: HistoryEntry | None = None
        arch = None
        if pm is not None:
            arch = self._arch_model(pm, kind, devid)
            if arch is not None:
                if footprint is not None:
                    entry = next((e for e in arch.entries if e.footprint == footprint), None)
                if entry is None:
                    matches = [e for e in arch.entries if e.size_bytes == size_bytes]
                    if len(matches) > 1 and footprint is None:
                        raise InputError(
                            f"kernel {kernel!r}: several footprints have size {size_bytes} B on {kind}{devid}",
                            path=pm.path,
                            hint="Give the footprint hash in the DAG file",
                        )
                    entry = matches[0] if matches else None
        query = KernelQuery(kernel, kind, devid, int(size_bytes), footprint, float(flops))
        if entry is not None and entry.mean_s > 0:
            return entry.mean_s * self._factor(query)
        if self.provider is not None:
            value = self.provider(query)
            if value is not None:
                if not (value > 0 and math.isfinite(value)):
                    raise InputError(f"kernel-time provider returned {value!r} s for {kernel!r} on {kind}{devid}")
                return float(value)
        if arch is not None:
            predicted = arch.regression.predict_s(size_bytes)
            if predicted is not None and predicted > 0:
                note = f"{kernel}: size {size_bytes} B not measured on {kind}{devid}, using StarPU's regression"
                if note not in self.notes:
                    self.notes.append(note)
                return predicted * self._factor(query)
        if self.fallback is not None:
            value = self.fallback(query)
            if value is not None:
                if not (value > 0 and math.isfinite(value)):
                    raise InputError(f"kernel-time fallback returned {value!r} s for {kernel!r} on {kind}{devid}")
                # NOTE: one line for the fallback, one per kernel and size (not per device:
                # nodes are homogeneous, and an 8-GPU node would repeat each line 8 times).
                for note in (
                    f"kernels without a model: {getattr(self.fallback, 'label', 'fallback times')}",
                    f"{kernel}, {size_bytes} B on {kind}: no model, {value * 1e6:.1f} us from the fallback",
                ):
                    if note not in self.notes:
                        self.notes.append(note)
                return float(value)
        where = f"{self.folder / (kernel + '.' + self.machine)}" if self.folder else "(no model folder)"
        if pm is None:
            reason = f"kernel {kernel!r} has no performance model for machine {self.machine!r} (looked for {where})"
        elif arch is None:
            reason = f"kernel {kernel!r} has no {kind} model in {where}"
        else:
            sizes = sorted({e.size_bytes for e in arch.entries})
            reason = f"kernel {kernel!r} has no {kind}{devid} measurement for {size_bytes} B in {where} (sizes: {sizes})"
        raise InputError(
            reason, hint="Calibrate it, give --kernel-time KERNEL=SECONDS, or ask for roofline-projected times (--roofline-missing)"
        )

    def _factor(self, query: KernelQuery) -> float:
        """The ``scale`` factor of a file-given duration (1 without one), remembered for sampling and noted."""
        if self.scale is None:
            return 1.0
        f = float(self.scale(query))
        if not (f > 0 and math.isfinite(f)):
            raise InputError(f"kernel-time scale returned {f!r} for {query.kernel!r} on {query.arch_kind}{query.devid}")
        self._factors[(query.kernel, query.arch_kind, query.devid, query.size_bytes)] = f
        if f != 1.0:
            for note in (
                f"kernel durations {getattr(self.scale, 'label', 'scaled')}",
                f"{query.kernel}, {query.size_bytes} B on {query.arch_kind}: measured time x {f:.4g}",
            ):
                if note not in self.notes:
                    self.notes.append(note)
        return f

    def deviation_s(self, kernel: str, kind: str, devid: int, size_bytes: int) -> float:
        """Standard deviation (s) from the history model (scaled like the mean), 0 when unknown."""
        pm = self.model_file(kernel)
        if pm is None:
            return 0.0
        arch = self._arch_model(pm, kind, devid)
        if arch is None:
            return 0.0
        for e in arch.entries:
            if e.size_bytes == size_bytes:
                return e.dev_s * self._factors.get((kernel, kind, devid, int(size_bytes)), 1.0)
        return 0.0

    # ------------------------------------------------------------ sampling
    def generator(self) -> np.random.Generator:
        """A fresh generator seeded with ``seed``: one per simulation, so that a run's draws do not depend
        on the runs before it (a sweep gives each run the durations it would get alone)."""
        return np.random.default_rng(self.seed)

    def sampler(
        self, kernel: str, kind: str, devid: int, size_bytes: int, mean_s: float, rng: np.random.Generator | None = None
    ) -> Callable[[], float] | None:
        """A no-argument callable drawing durations, or None in ``"mean"`` mode (use ``mean_s``).

        Draws come from ``rng`` (default: the models' own generator, shared by every sampler made without one).
        """
        rng = self.rng if rng is None else rng
        if self.mode == "mean":
            return None
        if self.mode == "normal":
            dev = self.deviation_s(kernel, kind, devid, size_bytes)
            if dev <= 0:
                return None
            return _NormalDraw(rng, mean_s, dev)
        arch_name = f"{kind}{devid}" if kind != "cpu" else "cpu"
        key = (kernel, arch_name, int(size_bytes))
        data = self.samples.get(key)
        if not data:
            raise InputError(
                f"no per-execution samples for kernel {kernel!r} on {arch_name} with {size_bytes} B", key="--samples"
            )
        if key not in self._hists:
            self._hists[key] = IrregularHistogram(data)
        draw = _HistDraw(rng, self._hists[key])
        factor = self._factors.get((kernel, kind, devid, int(size_bytes)), 1.0)
        return draw if factor == 1.0 else (lambda: factor * draw())


class StarpuHistoryModel:
    """StarPU's history-based perfmodels as the simulator's first source of kernel times (a task-kernel model)."""

    name: ClassVar[str] = "starpu-history"
    kind: ClassVar[str] = TASK_KERNEL
    baseline: ClassVar[bool] = False
    role: ClassVar[str] = "history"
    description: ClassVar[str] = ("StarPU's history-based perfmodels (--starpu-dir: codelets/45): mean per kernel, "
                                  "device and size, else --kernel-time, else StarPU's regression; sampled by "
                                  "--kernel-times normal/histogram")

    def build(self, request: TaskKernelRequest, fallback: KernelTimeProvider | None = None,
              scale: Callable[[KernelQuery], float] | None = None) -> KernelModels:
        """The ``KernelModels`` of ``request``'s files and options, asking ``fallback`` last, scaled by ``scale``."""
        return KernelModels(request.codelets, request.machine, provider=request.fixed, fallback=fallback,
                            scale=scale, mode=request.mode, seed=request.seed, samples=request.samples)


class _NormalDraw:
    """Draws from N(mean, dev), redrawn when <= 0; values are produced in blocks for speed."""

    __slots__ = ("rng", "mean", "dev", "buf", "pos")

    def __init__(self, rng: np.random.Generator, mean: float, dev: float) -> None:
        self.rng, self.mean, self.dev = rng, mean, dev
        self.buf: list[float] = []
        self.pos = 0

    def __call__(self) -> float:
        while True:
            if self.pos >= len(self.buf):
                self.buf = self.rng.normal(self.mean, self.dev, 256).tolist()
                self.pos = 0
            v = self.buf[self.pos]
            self.pos += 1
            if v > 0:
                return v


class _HistDraw:
    __slots__ = ("rng", "hist", "buf", "pos")

    def __init__(self, rng: np.random.Generator, hist: IrregularHistogram) -> None:
        self.rng, self.hist = rng, hist
        self.buf: list[float] = []
        self.pos = 0

    def __call__(self) -> float:
        if self.pos >= len(self.buf):
            self.buf = self.hist.sample(self.rng, 256).tolist()
            self.pos = 0
        v = self.buf[self.pos]
        self.pos += 1
        return v
