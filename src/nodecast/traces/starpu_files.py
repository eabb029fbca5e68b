"""Readers for the calibration files StarPU writes (the paper's section 4 inputs).

StarPU calibrates a machine once and stores (section 4 of Stanisic et al.):

* ``<machine>.platform.xml`` / ``<machine>.platform.v4.xml``: a SimGrid
  platform (hosts ``RAM``, ``CUDA<i>``, ``OpenCL<i>``, ``CPU<i>`` with ``memsize``
  and ``memcpy_peer`` properties; one link per direction and per pair of memory
  nodes, the shared PCI links ``... up``/``... down``/``... through`` and the
  ``Host`` link; full routes). Version 3 writes ``power="<flops>"`` and plain
  numbers, version 4 ``speed="<n>f"``, ``bandwidth="<n>Bps"``, ``latency="<n>s"``.
* ``<machine>.bandwidth`` / ``.latency``: memory node x memory node matrices
  (row = source, column = destination) in MB/s (10^6 bytes/s) and µs, ``nan``
  where no node exists. Node 0 is main RAM, then CUDA devices, then OpenCL.
* ``<machine>.config``: counts of CPUs, CUDA, OpenCL and MIC devices.
* ``codelets/45/<symbol>.<machine>``: history-based performance models (format
  version 45): per combination of devices and per implementation, the
  regression sums and coefficients, then one line per data-size footprint:
  hash, size (bytes), flops, mean and standard deviation of the duration (µs),
  sum, sum of squares and sample count.

Everything is returned in SI units (bytes, bytes/s, seconds). XML is parsed with
``xml.etree.ElementTree``, which never fetches the DOCTYPE's external DTD;
documents that declare entities are refused.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from nodecast import paths
from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.values import as_float, as_int

_BW_UNITS = {
    "": 1.0,
    "bps": 1 / 8,
    "kbps": 1e3 / 8,
    "mbps": 1e6 / 8,
    "gbps": 1e9 / 8,
    "tbps": 1e12 / 8,
    "kibps": 1024 / 8,
    "mibps": 1024**2 / 8,
    "gibps": 1024**3 / 8,
    "Bps": 1.0,
    "kBps": 1e3,
    "KBps": 1e3,
    "MBps": 1e6,
    "GBps": 1e9,
    "TBps": 1e12,
    "KiBps": 1024.0,
    "MiBps": 1024.0**2,
    "GiBps": 1024.0**3,
}
_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0, "h": 3600.0}
_SPEED_UNITS = {"": 1.0, "f": 1.0, "kf": 1e3, "Mf": 1e6, "Gf": 1e9, "Tf": 1e12}
_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")

#: Longest latency (s) a bus link or a ``.latency`` entry may have. StarPU's calibrations hold
#: 9.5-33 µs between RAM and GPUs (attila, hannibal) and 2 ms for a disk node (``RAM-DISK0``
#: in every shipped platform file); a second or more is a damaged file or a unit error.
MAX_LATENCY_S = 1.0
#: Lowest bandwidth (bytes/s) of a link or a ``.bandwidth`` entry: below 1 B/s one tile's copy
#: outlasts any simulated time the clock can hold (the same floor as ``--bandwidth-scale``'s).
MIN_BANDWIDTH_BPS = 1.0


def _quantity(text: str | None, units: dict[str, float], what: str, path: Path, key: str) -> float:
    if text is None:
        raise InputError(f"missing {what}", path=path, key=key, hint="Fix the platform file")
    m = _NUMBER_UNIT.match(text)
    if not m or m.group(2) not in units:
        raise InputError(f"cannot read {what} {text!r}", path=path, key=key, hint="Use e.g. 6e9Bps, 1e-5s")
    value = float(m.group(1)) * units[m.group(2)]
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{what} must be a finite number >= 0 (got {text!r})", path=path, key=key)
    return value


@dataclass(frozen=True)
class XmlHost:
    """A SimGrid host: name, speed (flop/s) and its properties (``memsize``, ``memcpy_peer``, ``model``)."""

    name: str
    speed_flops: float
    props: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class XmlLink:
    """A SimGrid link: one direction, bandwidth in bytes/s and latency in s."""

    name: str
    bandwidth_bps: float
    latency_s: float


@dataclass(frozen=True)
class PlatformXml:
    """What a SimGrid platform file declares: hosts, links, routes (src, dst) -> link names, config."""

    path: Path
    version: str
    hosts: dict[str, XmlHost]
    links: dict[str, XmlLink]
    routes: dict[tuple[str, str], tuple[str, ...]]
    config: dict[str, str]


def read_platform_xml(path: str | Path) -> PlatformXml:
    """Parse a StarPU-generated SimGrid platform (version 3 or 4 dialect).

    Routes declared ``symmetrical="YES"`` (SimGrid's default) also give the
    reverse route with the links in reverse order. Raises InputError for an
    unreadable file, a missing or malformed attribute, or a route naming an
    unknown link.
    """
    path = Path(path)
    try:
        raw = read_input(path, what="platform file")  # bounded, devices refused: see nodecast.inputs
    except OSError as exc:
        raise InputError(f"cannot read platform file ({exc.strerror})", path=path) from None
    if b"<!ENTITY" in raw:
        raise InputError("entity declarations are not accepted", path=path, hint="Remove the <!ENTITY> lines")
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        raise InputError(f"not well-formed XML ({exc})", path=path) from None
    if root.tag != "platform":
        raise InputError(f"root element is <{root.tag}>, not <platform>", path=path)
    version = root.get("version", "3")
    hosts: dict[str, XmlHost] = {}
    links: dict[str, XmlLink] = {}
    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    config: dict[str, str] = {}
    for cfg in root.iter("config"):
        for prop in cfg.iter("prop"):
            config[prop.get("id", "")] = prop.get("value", "")
    for host in root.iter("host"):
        name = host.get("id")
        if not name:
            raise InputError("a <host> has no id", path=path, key="host")
        speed_text = host.get("speed") or host.get("power")
        speed = _quantity(speed_text, _SPEED_UNITS, "host speed", path, f"host[{name}]")
        props = {p.get("id", ""): p.get("value", "") for p in host.iter("prop")}
        hosts[name] = XmlHost(name, speed, props)
    for link in root.iter("link"):
        name = link.get("id")
        if not name:
            raise InputError("a <link> has no id", path=path, key="link")
        bw = _quantity(link.get("bandwidth"), _BW_UNITS, "link bandwidth", path, f"link[{name}]")
        if bw < MIN_BANDWIDTH_BPS:
            raise InputError(f"link bandwidth must be >= {MIN_BANDWIDTH_BPS:g} B/s (got {link.get('bandwidth')!r})",
                             path=path, key=f"link[{name}]", hint="Fix the platform file or calibrate the bus again")
        lat = _quantity(link.get("latency", "0"), _TIME_UNITS, "link latency", path, f"link[{name}]")
        if lat > MAX_LATENCY_S:
            raise InputError(f"link latency {link.get('latency')!r} is above {MAX_LATENCY_S:g} s, beyond any bus",
                             path=path, key=f"link[{name}]", hint="Fix the platform file or calibrate the bus again")
        links[name] = XmlLink(name, bw, lat)
    for route in root.iter("route"):
        src, dst = route.get("src"), route.get("dst")
        if not src or not dst:
            raise InputError("a <route> lacks src or dst", path=path, key="route")
        names = []
        for ctn in route.iter("link_ctn"):
            lid = ctn.get("id")
            if lid not in links:
                raise InputError(f"route {src}->{dst} names unknown link {lid!r}", path=path, key="route")
            names.append(lid)
        routes[(src, dst)] = tuple(names)
        if route.get("symmetrical", "YES").upper() == "YES" and (dst, src) not in routes:
            routes[(dst, src)] = tuple(reversed(names))
    return PlatformXml(path, version, hosts, links, routes, config)


def read_bus_matrix(path: str | Path) -> list[list[float]]:
    """Read a ``.bandwidth`` (MB/s) or ``.latency`` (µs) matrix; rows/columns past the last real node are dropped.

    Values are returned as written (MB/s or µs); ``nan`` marks pairs without a
    measurement. Raises InputError on a malformed line.
    """
    path = Path(path)
    lines = _read_following_stubs(path, "bus file", errors="strict").splitlines()
    rows: list[list[float]] = []
    for lineno, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        rows.append([as_float(tok, path=path, field=f"column {k}", row=f"line {lineno}", nan_ok=True, inf_ok=True,
                              hint="Recalibrate the bus, or remove the .bandwidth and .latency files")
                     for k, tok in enumerate(text.split())])
    n = 0
    for i, row in enumerate(rows):
        if not all(math.isnan(v) for v in row):
            n = i + 1
    return [row[:n] for row in rows[:n]]


def read_bus_config(path: str | Path) -> dict[str, int]:
    """Read ``<machine>.config``: ``{"cpus": 12, "cuda": 3, "opencl": 3, "mic": 0}`` (keys present in the file)."""
    path = Path(path)
    lines = _read_following_stubs(path, "bus config", errors="strict").splitlines()
    out: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        if "#" not in line or not line.split("#", 1)[0].strip():
            continue
        value, label = line.split("#", 1)
        label = label.lower()
        for key, word in (("cpus", "cpus"), ("cuda", "cuda"), ("opencl", "opencl"), ("mic", "mic")):
            if word in label:
                out[key] = as_int(value, path=path, field=f"count of {label.strip()!r}", row=f"line {lineno}", ge=0,
                                  hint="Fix the count, or remove the .config file")
    return out


# ----------------------------------------------------------------- perfmodels
#: StarPU device type numbers in format 45.
DEVICE_KINDS = {0: "cpu", 1: "cuda", 2: "opencl", 3: "mic", 4: "mpi_ms", 5: "hip"}


@dataclass(frozen=True)
class HistoryEntry:
    """One footprint of a history-based model: durations in seconds."""

    footprint: int
    size_bytes: int
    flops: float
    mean_s: float
    dev_s: float
    n: int


@dataclass(frozen=True)
class Regression:
    """StarPU's fitted models: power law ``alpha*size^beta`` and non-linear ``a*size^b + c`` (both in µs)."""

    alpha: float
    beta: float
    n: int
    minx: float
    maxx: float
    a: float
    b: float
    c: float

    def linear_valid(self) -> bool:
        return math.isfinite(self.alpha) and math.isfinite(self.beta) and self.n > 0

    def nonlinear_valid(self) -> bool:
        return all(math.isfinite(v) for v in (self.a, self.b, self.c))

    def predict_s(self, size_bytes: float) -> float | None:
        """Predicted duration in s from the non-linear fit, else the power law, else None."""
        if self.nonlinear_valid():
            return (self.a * size_bytes**self.b + self.c) * 1e-6
        if self.linear_valid():
            return self.alpha * size_bytes**self.beta * 1e-6
        return None


@dataclass(frozen=True)
class ArchModel:
    """The model of one device combination and implementation, e.g. ``("cuda", 0, 1)`` impl 0."""

    kind: str
    devid: int
    ncores: int
    impl: int
    regression: Regression
    entries: tuple[HistoryEntry, ...]


@dataclass(frozen=True)
class PerfModelFile:
    """A whole history-based model file (one codelet on one machine)."""

    path: Path
    symbol: str
    machine: str
    version: int
    archs: tuple[ArchModel, ...]


class _Tokens:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = [
            (no, line.split()) for no, line in enumerate(text.splitlines(), 1) if line.strip() and not line.lstrip().startswith("#")
        ]
        self.pos = 0

    def line(self, what: str) -> tuple[int, list[str]]:
        if self.pos >= len(self.lines):
            raise InputError(f"file ends where {what} was expected", path=self.path, hint="The model file is truncated")
        item = self.lines[self.pos]
        self.pos += 1
        return item

    def int(self, what: str) -> int:
        """The next line's first token: a count, device type, id or version (an integer >= 0)."""
        no, toks = self.line(what)
        return as_int(toks[0], path=self.path, field=what, row=f"line {no}", ge=0, hint=_DAMAGED_MODEL)

    def floats(self, what: str, n: int) -> tuple[int, list[str], list[float]]:
        """The next line's first ``n`` tokens, as written and as floats; ``nan`` and ``inf`` pass (StarPU
        writes ``nan`` for a regression it could not fit), text does not."""
        no, toks = self.line(what)
        if len(toks) < n:
            raise InputError(f"line {no}: expected {n} values for {what}, got {len(toks)}", path=self.path)
        values = [as_float(t, path=self.path, field=f"{what} (field {k})", row=f"line {no}", nan_ok=True, inf_ok=True,
                           hint=_DAMAGED_MODEL) for k, t in enumerate(toks[:n], 1)]
        return no, toks[:n], values


def _read_following_stubs(path: Path, what: str = "performance model", errors: str = "replace") -> str:
    """Read a StarPU file; a file whose whole content names a sibling file is a symlink stub and is followed.

    (Git checkouts without symlink support turn StarPU's ``x.hannibal-pitch ->
    x.hannibal`` links into one-line files holding the target's name.)
    ``errors="strict"`` refuses bytes that are not UTF-8 (InputError).
    """
    seen = set()
    current = path
    while True:
        try:
            # Bounded, devices refused (nodecast.inputs); newlines read as read_text's universal newlines would.
            text = read_input(current, what=what).decode("utf-8", errors=errors)
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        except OSError as exc:
            raise InputError(f"cannot read {what} ({exc.strerror})", path=current) from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not a {what}: byte {exc.start} is not UTF-8 text", path=current) from None
        target = text.strip()
        if text and "\n" not in text.strip() and " " not in target and "/" not in target and not target.startswith("#"):
            nxt = current.parent / target
            if paths.names_a_file(nxt) and nxt not in seen and len(seen) < 8:
                seen.add(current)
                current = nxt
                continue
            if "." in target and not target[0].isdigit() and paths.stat_quietly(nxt) is None:
                raise InputError(
                    f"is a link stub to {target!r}, which does not exist", path=current, hint="Copy the target model too"
                )
        return text


#: longest kernel duration a model file may hold (s): anything above is a damaged file or a unit error
MAX_KERNEL_S = 1e6
#: largest data size of a history entry (bytes): 2^50 (1 PiB), the bound of a DAG file's data handles too
MAX_ENTRY_BYTES = 1 << 50
_DAMAGED_MODEL = "The model file is damaged: recalibrate the kernel or remove the file"


def read_perfmodel(path: str | Path) -> PerfModelFile:
    """Parse a StarPU history-based performance model file (format version 45).

    An empty file gives a model with no architecture. Raises InputError (with
    the line number) on anything else it cannot read.
    """
    path = Path(path)
    text = _read_following_stubs(path)
    symbol, _, machine = path.name.rpartition(".")
    tok = _Tokens(path, text)
    if not tok.lines:
        return PerfModelFile(path, symbol, machine, 0, ())
    version = tok.int("the format version")
    if version != 45:
        raise InputError(f"format version {version} is not supported (45 is)", path=path)
    archs: list[ArchModel] = []
    for _ in range(tok.int("the number of combinations")):
        devices = []
        for _ in range(tok.int("the number of device types")):
            kind = tok.int("a device type")
            if kind not in DEVICE_KINDS:
                no = tok.lines[tok.pos - 1][0]
                raise InputError(
                    f"line {no}: unknown device type {kind} (StarPU's are {', '.join(f'{k} {v}' for k, v in DEVICE_KINDS.items())})",
                    path=path,
                    hint="The model file is damaged or from an unsupported StarPU version",
                )
            devid = tok.int("a device id")
            ncores = tok.int("a number of cores")
            devices.append((DEVICE_KINDS[kind], devid, ncores))
        for impl in range(tok.int("the number of implementations")):
            nentries = tok.int("the number of entries")
            reg_no, reg_text, reg = tok.floats("the regression line", 9)
            # StarPU writes the regression's sample count n as an unsigned integer (nan would not convert).
            reg_n = as_int(reg_text[6], path=path, field="the regression line (field 7, n)", row=f"line {reg_no}",
                           ge=0, hint=_DAMAGED_MODEL)
            # Some files StarPU wrote concurrently swap the non-linear line and
            # the multiple-regression flag; accept both orders.
            if len(tok.lines[min(tok.pos, len(tok.lines) - 1)][1]) == 1:
                flag = tok.int("the multiple-regression flag")
                _, _, nl = tok.floats("the non-linear coefficients", 3)
            else:
                _, _, nl = tok.floats("the non-linear coefficients", 3)
                flag = tok.int("the multiple-regression flag")
            if flag:
                ncoeff = tok.int("the number of multiple-regression coefficients")
                tok.floats("the multiple-regression coefficients", ncoeff)
            entries = []
            for _ in range(nentries):
                no, toks = tok.line("a history entry")
                if len(toks) < 8:
                    raise InputError(f"line {no}: a history entry needs 8 fields, got {len(toks)}", path=path)
                entries.append(_history_entry(toks, path, no))
                mean_us, dev_us = entries[-1].mean_s * 1e6, entries[-1].dev_s * 1e6
                # NOTE: StarPU writes the mean in µs of measured runs: > 0, and no kernel runs for days.
                if not (0 < mean_us <= MAX_KERNEL_S * 1e6) or not (0 <= dev_us < math.inf):
                    raise InputError(
                        f"line {no}: history entry with mean {toks[3]} µs and deviation {toks[4]} µs; the mean must be "
                        f"> 0 and at most {MAX_KERNEL_S:.0e} s, the deviation a finite number >= 0",
                        path=path,
                        hint="The model file is damaged: recalibrate the kernel or remove the file",
                    )
            regression = Regression(reg[4], reg[5], reg_n, reg[7], reg[8], nl[0], nl[1], nl[2])
            kind, devid, ncores = devices[0] if len(devices) == 1 else ("+".join(d[0] for d in devices), devices[0][1], devices[0][2])
            archs.append(ArchModel(kind, devid, ncores, impl, regression, tuple(entries)))
    return PerfModelFile(path, symbol, machine, version, tuple(archs))


def _history_entry(toks: list[str], path: Path, no: int) -> HistoryEntry:
    """One history line (hash, size, flops, mean, dev, sum, sum2, n), each field checked by ``nodecast.values``.

    The footprint is StarPU's 32-bit hash in hex, the size a byte count up to
    ``MAX_ENTRY_BYTES``, flops a finite number >= 0, n a count; mean and
    deviation (µs) may read as anything numeric here, the caller judges them.
    """
    row = f"line {no}"

    def field(k: int, name: str) -> str:
        return f"history entry field {k} ({name})"

    return HistoryEntry(
        footprint=as_int(toks[0], path=path, field=field(1, "hash"), row=row, base=16, ge=0, le=(1 << 32) - 1,
                         hint=_DAMAGED_MODEL),
        size_bytes=as_int(toks[1], path=path, field=field(2, "size"), row=row, ge=0, le=MAX_ENTRY_BYTES,
                          hint=_DAMAGED_MODEL),
        flops=as_float(toks[2], path=path, field=field(3, "flops"), row=row, ge=0, hint=_DAMAGED_MODEL),
        mean_s=as_float(toks[3], path=path, field=field(4, "mean"), row=row, nan_ok=True, inf_ok=True,
                        hint=_DAMAGED_MODEL) * 1e-6,
        dev_s=as_float(toks[4], path=path, field=field(5, "deviation"), row=row, nan_ok=True, inf_ok=True,
                       hint=_DAMAGED_MODEL) * 1e-6,
        n=as_int(toks[7], path=path, field=field(8, "n"), row=row, ge=0, hint=_DAMAGED_MODEL),
    )
