"""``nodecast calibrate`` at the terminal: measured copy classes, GPU maxima, host copy rate, files written.

GB/s = 1e9 B/s, TFLOP/s = 1e12 FLOP/s, 1-byte costs in µs.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from nodecast.calibrate.results import BenchmarkFamilies, Calibration, HostCopyCalibration
from nodecast.report.tables import console as results_console
from nodecast.report.terminal import render

GB = 1e9

#: how --list names each placement scope
_SCOPE = {"host": "NUMA node x GPU", "gpu": "GPU", "pair": "ordered GPU pair", "duplex-pair": "GPU pair"}


def _console(console: Console | None) -> Console:
    return console or results_console(width_when_piped=200)


def _host_copy(console: Any, host_copy: Any) -> None:
    console.print(f"host copy, one thread: {host_copy.bandwidth_bps / GB:.2f} GB/s ({host_copy.method()})",
                  soft_wrap=True, highlight=False)


def _wrote_machine(console: Console, path: Any, machine: Any) -> None:
    console.print(f"wrote {path} (machine {machine.name!r}; load it with --to/--from {path})")


@render.register(Calibration)
def _(result: Calibration, console: Console | None = None) -> None:
    console = _console(console)
    values, results, failed = result.values, result.results, result.failed
    table = Table(title=f"Measured copy classes ({values.reference or 'nothing measured'}); GB/s = 1e9 B/s")
    for col in ("class", "1-byte cost (µs)", "bandwidth 1/G (GB/s)", "source"):
        table.add_column(col, justify="right" if "(" in col else "left")
    for klass, cv in sorted(values.classes.items()):
        bw = f"{cv.bandwidth_bps / GB:.2f}" if cv.bandwidth_bps is not None else "—"
        table.add_row(klass, f"{cv.one_byte_s * 1e6:.3f}", bw, cv.source)
    console.print(table)
    if values.peak_flops or values.level_bandwidth_bps:
        gt = Table(title="GPU maxima (fastest repetition); TFLOP/s = 1e12 FLOP/s, GB/s = 1e9 B/s")
        gt.add_column("quantity")
        gt.add_column("value", justify="right")
        for p, (fma, am) in sorted(values.peak_flops.items()):
            gt.add_row(f"{p} FMA", f"{fma / 1e12:.2f} TFLOP/s")
            gt.add_row(f"{p} ADD/MUL", f"{am / 1e12:.2f} TFLOP/s")
        for level, bw in values.level_bandwidth_bps.items():
            gt.add_row(f"{level} bandwidth", f"{bw / GB:.0f} GB/s")
        console.print(gt)
    if result.host_copy is not None:
        _host_copy(console, result.host_copy)
    for note in values.notes:
        console.print(f"note: {note}")
    if failed:
        console.print(f"{len(failed)} of {len(results)} points failed or were skipped (error_message in "
                      f"{result.json_path}); first: {failed[0].name}: {failed[0].error}")
    console.print(f"wrote {result.json_path} ({len(results)} points)")
    if result.toml_path is not None and result.machine is not None:
        _wrote_machine(console, result.toml_path, result.machine)


@render.register(HostCopyCalibration)
def _(result: HostCopyCalibration, console: Console | None = None) -> None:
    console = _console(console)
    _host_copy(console, result.host_copy)
    _wrote_machine(console, result.toml_path, result.machine)


@render.register(BenchmarkFamilies)
def _(result: BenchmarkFamilies, console: Console | None = None) -> None:
    table = Table(title="nodecast calibrate benchmark families")
    for col in ("family", "placed per", "machine-file class", "what it measures"):
        table.add_column(col)
    for name, sc, klass, desc in result.rows:
        table.add_row(name, _SCOPE[sc], klass or "—", desc)
    _console(console).print(table)
