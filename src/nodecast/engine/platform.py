"""The simulated node: memory nodes, directed links, routes, and the bus calibration.

A ``Platform`` is what the runtime simulation needs (Stanisic et al.,
section 6, Fig. 2b):

* memory nodes: node 0 is host RAM, then one node per GPU (``CUDA0``...), each
  with a capacity in bytes (RAM is unbounded);
* directed links with a bandwidth (bytes/s) and a latency (s): a dedicated
  up-link and down-link per CPU-GPU pair plus the shared links that carry the
  PCI bus's total capacity (StarPU's ``PCI:... up/down/through`` and ``Host``);
* a route (a tuple of link indices, a link may repeat) for every ordered pair
  of memory nodes that can copy directly; GPU->GPU copies go peer-to-peer where
  the platform allows it (``memcpy_peer``), else through RAM in two hops;
* the bus *calibration* StarPU's schedulers use to predict a transfer's time:
  ``latency + size / bandwidth x 2 x ngpus`` (``starpu_transfer_predict``: the
  ``2 x ngpus`` factor is StarPU's allowance for contention, where ``ngpus``
  is the number of GPUs sharing the bus);
* the time of a copy alone on a route, by the one link-time rule of
  ``nodecast.engine.links`` (``copy_time_s``, ``copy_bound_bps``).

Build one with ``Platform.from_starpu`` (a StarPU ``*.platform.xml`` or
``*.platform.v4.xml``, plus the ``.bandwidth``/``.latency`` files beside it) or
``Platform.from_machine`` (a nodecast Machine). What-ifs return modified
copies: ``with_gpu_count``, ``with_gpu_memory``, ``with_bandwidth_scale``.
"""

from __future__ import annotations

import copy
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from nodecast.engine.links import (
    LARGE_COPY_BYTES,
    Direction,
    LinkModel,
    copy_rate_bps,
    copy_time_s,
    machine_links,
    route_capacity_bps,
)
from nodecast.errors import InputError
from nodecast.traces.starpu_files import (
    MAX_LATENCY_S,
    MIN_BANDWIDTH_BPS,
    read_bus_config,
    read_bus_matrix,
    read_platform_xml,
)
from nodecast.values import as_float

RAM = 0
#: GPUs a simulated node may have (--gpus): StarPU itself is built for 4 CUDA devices by default (--enable-maxcudadev)
MAX_GPUS = 32
_GPU_HOST = re.compile(r"^CUDA(\d+)$")


@dataclass
class Platform:
    """Memory nodes, links and routes of one node, in SI units. Node 0 is RAM.

    ``route_links[src][dst]`` is None where no direct copy exists. ``model_devid``
    maps a GPU node to the device id of its kernel performance models.
    ``link_models`` (per link, ``nodecast.engine.links.LinkModel``; empty for a
    StarPU platform, whose links are measured) give a link's bandwidth at every
    copy size.
    """

    name: str
    source: str
    node_names: list[str]
    node_kinds: list[str]
    capacity_bytes: list[float]
    model_devid: list[int]
    gpu_models: list[str]
    n_cpus: int
    link_names: list[str]
    link_bandwidth_bps: list[float]
    link_latency_s: list[float]
    route_links: list[list[tuple[int, ...] | None]]
    route_latency_s: list[list[float]]
    peer: list[list[bool]]
    predict_bandwidth_bps: list[list[float]]
    predict_latency_s: list[list[float]]
    bus_ngpus: list[list[int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    link_models: list[LinkModel | None] = field(default_factory=list)
    #: ``copy_bound_bps`` per (src, dst, bytes), made on use (what-ifs start their copies without it)
    _bounds: dict[tuple[int, int, float], float | None] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------ queries
    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def gpu_nodes(self) -> list[int]:
        return [i for i, k in enumerate(self.node_kinds) if k == "cuda"]

    def copy_path(self, src: int, dst: int) -> list[tuple[int, int]]:
        """Hops of a data copy from ``src`` to ``dst``: direct, or GPU->RAM->GPU when peer copies are not allowed.

        Raises InputError when the platform has no route for a needed hop.
        """
        if src == dst:
            return []
        if self.route_links[src][dst] is not None and (src == RAM or dst == RAM or self.peer[src][dst]):
            return [(src, dst)]
        if src != RAM and dst != RAM:
            return self.copy_path(src, RAM) + self.copy_path(RAM, dst)
        raise InputError(
            f"no route between memory nodes {self.node_names[src]} and {self.node_names[dst]}",
            path=self.source,
            key="routes",
            hint="Add a route (or a link) joining them",
        )

    def route_direction(self, src: int, dst: int) -> Direction:
        """The direction of a copy from node ``src``: the GPU reads host memory on a copy from RAM, else writes."""
        return "read" if src == RAM else "write"

    def copy_rate_bps(self, src: int, dst: int, size_bytes: float) -> float:
        """The rate of a copy of ``size_bytes`` alone on the route from ``src`` to ``dst`` (bytes/s; the link-time
        rule's B(n, R), ``nodecast.engine.links``). The route must exist."""
        return copy_rate_bps(size_bytes, self.route_links[src][dst], self.link_bandwidth_bps, self.link_models,
                             self.route_direction(src, dst))

    def copy_time_s(self, src: int, dst: int, size_bytes: float) -> float:
        """The time of a copy of ``size_bytes`` alone on the route from ``src`` to ``dst``: the route's latency plus
        ``size_bytes`` at ``copy_rate_bps`` (seconds; the link-time rule's T(n, R))."""
        return copy_time_s(size_bytes, self.route_latency_s[src][dst], self.copy_rate_bps(src, dst, size_bytes))

    def copy_bound_bps(self, src: int, dst: int, size_bytes: float) -> float | None:
        """The rate bound that makes a copy alone on the route from ``src`` to ``dst`` take ``copy_time_s`` on the
        fluid network: ``copy_rate_bps`` where it is below the route's capacity, else None (the links themselves
        give it: always so on a platform without link models)."""
        key = (src, dst, size_bytes)
        if key not in self._bounds:
            bound = None
            if self.link_models:
                rate = self.copy_rate_bps(src, dst, size_bytes)
                if rate < route_capacity_bps(self.link_bandwidth_bps, self.route_links[src][dst]):
                    bound = rate
            self._bounds[key] = bound
        return self._bounds[key]

    def predict_transfer_s(self, src: int, dst: int, size_bytes: float) -> float:
        """StarPU's prediction of one hop: ``latency + size / bandwidth x 2 x ngpus`` (s)."""
        if src == dst:
            return 0.0
        ngpus = self.bus_ngpus[src][dst] if self.bus_ngpus else 0
        if ngpus != 1:
            ngpus = len(self.gpu_nodes)
        bw = self.predict_bandwidth_bps[src][dst]
        return self.predict_latency_s[src][dst] + size_bytes / bw * 2 * ngpus

    def validate(self) -> None:
        """Check that every GPU can copy to and from RAM. Raises InputError naming the pair."""
        for g in self.gpu_nodes:
            for a, b in ((RAM, g), (g, RAM)):
                if self.route_links[a][b] is None:
                    raise InputError(
                        f"no route between memory nodes {self.node_names[a]} and {self.node_names[b]}",
                        path=self.source,
                        key="routes",
                        hint="Add a route (or a link) joining them",
                    )
                bw = self.predict_bandwidth_bps[a][b]
                if not (bw > 0 and math.isfinite(bw)):
                    raise InputError(
                        f"no usable bandwidth calibration from {self.node_names[a]} to {self.node_names[b]} (got {bw!r})",
                        path=self.source,
                    )

    # ------------------------------------------------------------ builders
    @classmethod
    def from_starpu(cls, xml_path: str | Path, *, bus_dir: str | Path | None = None) -> Platform:
        """Import StarPU's SimGrid platform file and, when present, its ``.bandwidth``/``.latency``/``.config``.

        The bus files are looked up beside the XML (``<machine>.bandwidth``...) or
        in ``bus_dir``. Without them the scheduler's predictions use each route's
        bottleneck bandwidth and total latency. OpenCL and disk nodes are ignored.
        A bus file that is a broken or looping symbolic link is an InputError, not
        an absent file (it would silently change where the predictions come from).
        """
        xml_path = Path(xml_path)
        px = read_platform_xml(xml_path)
        machine = xml_path.name.split(".platform")[0]
        folder = Path(bus_dir) if bus_dir is not None else xml_path.parent
        gpus = sorted(
            ((int(m.group(1)), name) for name in px.hosts if (m := _GPU_HOST.match(name))), key=lambda t: t[0]
        )
        if "RAM" not in px.hosts:
            raise InputError("platform has no host named RAM (main memory)", path=xml_path, key="host")
        hosts = ["RAM"] + [name for _, name in gpus]
        link_names = list(px.links)
        link_index = {name: i for i, name in enumerate(link_names)}
        n = len(hosts)
        route_links: list[list[tuple[int, ...] | None]] = [[None] * n for _ in range(n)]
        route_latency = [[0.0] * n for _ in range(n)]
        for i, a in enumerate(hosts):
            for j, b in enumerate(hosts):
                if i == j:
                    route_links[i][j] = ()
                    continue
                names = px.routes.get((a, b))
                if names is None:
                    continue
                route_links[i][j] = tuple(link_index[x] for x in names)
                route_latency[i][j] = sum(px.links[x].latency_s for x in names)
        capacity = [math.inf]
        gpu_models = []
        for _, name in gpus:
            props = px.hosts[name].props
            if "memsize" not in props:
                raise InputError(f"host {name} lacks a memsize property", path=xml_path, key=f"host[{name}]")
            # NOTE: inf stands for unlimited memory; NaN, text and sizes <= 0 are refused.
            memsize = as_float(props["memsize"], path=xml_path, field=f"host[{name}] memsize (bytes)", gt=0.0,
                               inf_ok=True, hint="Fix the platform file or calibrate the bus again")
            capacity.append(memsize)
            gpu_models.append(props.get("model", "GPU"))
        peer = [[False] * n for _ in range(n)]
        for i in range(1, n):
            for j in range(1, n):
                if i != j:
                    # StarPU asks the handling GPU whether it can copy directly (memcpy_peer).
                    ok_i = px.hosts[hosts[i]].props.get("memcpy_peer", "0").strip() not in ("", "0")
                    ok_j = px.hosts[hosts[j]].props.get("memcpy_peer", "0").strip() not in ("", "0")
                    peer[i][j] = ok_i and ok_j
        n_cpus = sum(1 for name in px.hosts if re.match(r"^CPU\d+$", name))
        plat = cls(
            name=machine,
            source=str(xml_path),
            node_names=hosts,
            node_kinds=["ram"] + ["cuda"] * len(gpus),
            capacity_bytes=capacity,
            model_devid=[0] + [d for d, _ in gpus],
            gpu_models=gpu_models,
            n_cpus=n_cpus,
            link_names=link_names,
            link_bandwidth_bps=[px.links[x].bandwidth_bps for x in link_names],
            link_latency_s=[px.links[x].latency_s for x in link_names],
            route_links=route_links,
            route_latency_s=route_latency,
            peer=peer,
            predict_bandwidth_bps=[[math.nan] * n for _ in range(n)],
            predict_latency_s=[[0.0] * n for _ in range(n)],
        )
        bw_file, lat_file = folder / f"{machine}.bandwidth", folder / f"{machine}.latency"
        if os.path.lexists(bw_file) and os.path.lexists(lat_file):
            bw = read_bus_matrix(bw_file)
            lat = read_bus_matrix(lat_file)
            # StarPU numbers memory nodes RAM, CUDA0..., so matrix index = node index.
            for i in range(n):
                for j in range(n):
                    if i != j:
                        mb_s = _bus_value(bw, i, j, bw_file, hosts, "bandwidth (MB/s)",
                                          ge=MIN_BANDWIDTH_BPS / 1e6)
                        us = _bus_value(lat, i, j, lat_file, hosts, "latency (µs)", ge=0.0, le=MAX_LATENCY_S * 1e6)
                        plat.predict_bandwidth_bps[i][j] = mb_s * 1e6
                        plat.predict_latency_s[i][j] = us * 1e-6
            plat.notes.append(f"scheduler transfer predictions from {bw_file.name} and {lat_file.name}")
        else:
            plat._predictions_from_routes()
            plat.notes.append("no .bandwidth/.latency calibration beside the platform: predictions from routes")
        cfg = folder / f"{machine}.config"
        if os.path.lexists(cfg):
            plat.n_cpus = read_bus_config(cfg).get("cpus", plat.n_cpus)
        plat.bus_ngpus = _count_ngpus(plat)
        plat.validate()
        return plat

    @classmethod
    def from_machine(cls, machine) -> Platform:
        """Build from a nodecast Machine by the link-time rule of ``nodecast.engine.links`` (AHEAD, the link
        model ``project`` uses), so that one machine file means one link model.

        Links, routes, capacities and route latencies come from ``links.machine_links``: every Link becomes two
        directed links carrying AHEAD's effective bandwidth of a large copy, each route's latency is the 1-byte
        cost L+O of its copy class, and a copy alone takes ``(L+O) + n / BW_eff(n)``, AHEAD's eq. 10 at its own
        size (``copy_time_s``); concurrent copies share the capacities max-min. The scheduler's calibration is
        each route's capacity and latency.
        """
        ml = machine_links(machine)
        ngpu = machine.gpu.count
        n = len(ml.node_names)
        plat = cls(
            name=machine.name,
            source=str(machine.path or machine.name),
            node_names=ml.node_names,
            node_kinds=["ram"] + ["cuda"] * ngpu,
            capacity_bytes=[math.inf] + [float(machine.gpu.memory_bytes)] * ngpu,
            model_devid=[0] + list(range(ngpu)),
            gpu_models=[machine.gpu.model] * ngpu,
            n_cpus=machine.cpu.sockets * machine.cpu.cores_per_socket,
            link_names=ml.link_names,
            link_bandwidth_bps=ml.link_bandwidth_bps,
            link_latency_s=ml.link_latency_s,
            route_links=ml.route_links,
            route_latency_s=ml.route_latency_s,
            peer=ml.peer,
            predict_bandwidth_bps=[[math.nan] * n for _ in range(n)],
            predict_latency_s=[[0.0] * n for _ in range(n)],
            link_models=ml.link_models,
        )
        plat._predictions_from_routes()
        plat.bus_ngpus = [[0] * n for _ in range(n)]
        plat.notes.append(
            f"built from machine {machine.name}: link capacities are AHEAD's effective bandwidth of "
            f"{LARGE_COPY_BYTES / 2**30:g} GiB copies (PCIe TLP / NVLink flit overheads), route latencies "
            "its 1-byte costs L+O, as `nodecast project` uses them; scheduler predictions from route bottlenecks")
        plat.notes.extend(ml.notes)
        plat.validate()
        return plat

    def _copy(self) -> Platform:
        """A deep copy for a what-if, without the copy bounds computed on this platform (its routes or
        capacities are about to change)."""
        plat = copy.deepcopy(self)
        plat._bounds = {}
        return plat

    def _predictions_from_routes(self) -> None:
        """The scheduler's calibration where no bus file gives it: each route's capacity and latency (the
        link-time rule for large copies, ``links.route_capacity_bps``)."""
        n = self.n_nodes
        for i in range(n):
            for j in range(n):
                links = self.route_links[i][j]
                if i != j and links:
                    self.predict_bandwidth_bps[i][j] = route_capacity_bps(self.link_bandwidth_bps, links)
                    self.predict_latency_s[i][j] = self.route_latency_s[i][j]

    # ------------------------------------------------------------ what-ifs
    def with_gpu_count(self, count: int) -> Platform:
        """Keep the first ``count`` GPUs, or add copies of existing ones (round robin) to reach ``count``.

        An added GPU gets its own copies of the links that only its original's
        routes use (per-pair links, its slot and bridge) and shares every other
        link (shared PCI bridges, ``Host``);
        it copies to and from other GPUs like its original does, and to and from
        its original (or another copy of it) through RAM.
        """
        gpus = self.gpu_nodes
        if count < 1:
            raise InputError(f"GPU count must be >= 1 (got {count})", key="--gpus")
        if count > MAX_GPUS:
            # NOTE: the runtime keeps per-pair request channels and stream rules (O(nodes^2) and O(nodes^4) setup).
            raise InputError(f"at most {MAX_GPUS} GPUs per node can be simulated (got {count})", key="--gpus")
        if count <= len(gpus):
            keep = [RAM, *gpus[:count]]
            return self._subset(keep)
        plat = self._copy()
        originals = list(gpus)
        for k in range(len(gpus), count):
            plat._clone_gpu(originals[k % len(originals)], f"CUDA{k}")
        plat.bus_ngpus = _count_ngpus(plat) if any(plat.bus_ngpus) else [[0] * plat.n_nodes for _ in range(plat.n_nodes)]
        plat.notes.append(f"what-if: {count} GPUs ({count - len(gpus)} added as copies)")
        return plat

    def _subset(self, keep: list[int]) -> Platform:
        plat = self._copy()
        pick = lambda m: [[m[i][j] for j in keep] for i in keep]  # noqa: E731
        plat.node_names = [self.node_names[i] for i in keep]
        plat.node_kinds = [self.node_kinds[i] for i in keep]
        plat.capacity_bytes = [self.capacity_bytes[i] for i in keep]
        plat.model_devid = [self.model_devid[i] for i in keep]
        plat.gpu_models = [self.gpu_models[i - 1] for i in keep[1:]]
        plat.route_links = pick(self.route_links)
        plat.route_latency_s = pick(self.route_latency_s)
        plat.peer = pick(self.peer)
        plat.predict_bandwidth_bps = pick(self.predict_bandwidth_bps)
        plat.predict_latency_s = pick(self.predict_latency_s)
        plat.bus_ngpus = pick(self.bus_ngpus) if self.bus_ngpus else []
        if len(keep) - 1 < self.n_nodes - 1:
            plat.notes.append(f"what-if: {len(keep) - 1} of {self.n_nodes - 1} GPUs")
        return plat

    def _clone_gpu(self, g: int, name: str) -> None:
        n = self.n_nodes
        # A link every route of which starts or ends at g is g's own (its
        # per-pair links, its slot and bridge links): the copy gets duplicates.
        users: dict[int, set[tuple[int, int]]] = {}
        for i in range(n):
            for j in range(n):
                for x in self.route_links[i][j] or ():
                    users.setdefault(x, set()).add((i, j))
        private = {x for x, pairs in users.items() if all(g in pair for pair in pairs)}
        renamed: dict[int, int] = {}
        for x in sorted(private):
            renamed[x] = len(self.link_names)
            self.link_names.append(f"{self.link_names[x]} ({name})")
            self.link_bandwidth_bps.append(self.link_bandwidth_bps[x])
            self.link_latency_s.append(self.link_latency_s[x])
            if self.link_models:
                self.link_models.append(self.link_models[x])
        sub = lambda links: None if links is None else tuple(renamed.get(x, x) for x in links)  # noqa: E731
        new = n
        self.node_names.append(name)
        self.node_kinds.append("cuda")
        self.capacity_bytes.append(self.capacity_bytes[g])
        self.model_devid.append(self.model_devid[g])
        self.gpu_models.append(self.gpu_models[g - 1])
        for row in (self.route_links, self.route_latency_s, self.peer, self.predict_bandwidth_bps, self.predict_latency_s):
            for i in range(n):
                row[i].append(row[i][g])
            row.append(list(row[g]) + [row[g][g]])
        for i in range(new + 1):
            self.route_links[i][new] = sub(self.route_links[i][g]) if i != g else None
            self.route_links[new][i] = sub(self.route_links[g][i]) if i != g else None
        self.route_links[new][new] = ()
        self.peer[g][new] = self.peer[new][g] = False
        # Copies of the same original only meet through RAM.
        for i in range(1, new):
            if self.node_names[i].startswith("CUDA") and self.model_devid[i] == self.model_devid[g] and i != g:
                self.route_links[i][new] = self.route_links[new][i] = None
                self.peer[i][new] = self.peer[new][i] = False

    def with_gpu_memory(self, bytes_per_gpu: float) -> Platform:
        """Every GPU gets ``bytes_per_gpu`` of memory."""
        if not (bytes_per_gpu > 0 and math.isfinite(bytes_per_gpu)):
            raise InputError(f"GPU memory must be > 0 bytes (got {bytes_per_gpu!r})", key="--gpu-memory")
        plat = self._copy()
        for g in plat.gpu_nodes:
            plat.capacity_bytes[g] = float(bytes_per_gpu)
        plat.notes.append(f"what-if: GPU memory {bytes_per_gpu / 1e9:.3f} GB")
        return plat

    def with_bandwidth_scale(self, factor: float, pattern: str | None = None) -> Platform:
        """Multiply link bandwidths (and the matching calibration) by ``factor``; ``pattern`` (regex) selects links."""
        if not (factor > 0 and math.isfinite(factor)):
            raise InputError(f"bandwidth scale must be > 0 (got {factor!r})", key="--bandwidth-scale")
        try:
            rx = re.compile(pattern) if pattern else None
        except re.error as exc:
            raise InputError(f"not a regular expression: {pattern!r} ({exc})", key="--bandwidth-links") from None
        plat = self._copy()
        matched = [i for i, name in enumerate(plat.link_names) if rx is None or rx.search(name)]
        if not matched:
            raise InputError(
                f"{pattern!r} matches no link",
                key="--bandwidth-links",
                hint=f"The platform's links are: {', '.join(plat.link_names)}",
            )
        for i in matched:
            plat.link_bandwidth_bps[i] *= factor
            model = plat.link_models[i] if plat.link_models else None
            if model is not None:
                plat.link_models[i] = replace(model, scale=model.scale * factor)
            # NOTE: below 1 B/s a tile takes longer than any simulated time can hold (the clock would overflow)
            if not math.isfinite(plat.link_bandwidth_bps[i]) or plat.link_bandwidth_bps[i] < 1.0:
                raise InputError(
                    f"bandwidth x{factor:g} takes link {plat.link_names[i]!r} out of range "
                    f"({plat.link_bandwidth_bps[i]!r} B/s)",
                    key="--bandwidth-scale",
                )
        if rx is None:
            for row in plat.predict_bandwidth_bps:
                for j in range(len(row)):
                    row[j] *= factor
        plat.notes.append(f"what-if: bandwidth x{factor:g}" + (f" on links matching {pattern!r}" if pattern else ""))
        return plat


def _bus_value(
    matrix: list[list[float]], i: int, j: int, path: Path, hosts: list[str], what: str, *, ge: float,
    le: float | None = None,
) -> float:
    """Entry (i, j) of a StarPU bus matrix, checked to lie in ``ge``..``le``, or InputError naming the file and
    the pair (``nodecast.values.as_float``: NaN, infinities and values out of range are refused)."""
    hint = "Recalibrate the bus, or remove the .bandwidth and .latency files (predictions then come from the routes)"
    field = f"{what} from {hosts[i]} to {hosts[j]}"
    if i >= len(matrix) or j >= len(matrix[i]):
        raise InputError("is missing", path=path, key=f"{field}, row {i}, column {j}", hint=hint)
    return as_float(matrix[i][j], path=path, field=field, row=f"row {i}, column {j}", ge=ge, le=le, hint=hint)


def _count_ngpus(plat: Platform) -> list[list[int]]:
    """StarPU's per-bus GPU count (``_starpu_simgrid_count_ngpus``), 0 where StarPU leaves it unset.

    For a GPU->GPU route that avoids the ``Host`` link, find the last ``* through``
    PCI bridge before the first ``* up`` link and count the GPUs whose route to
    RAM crosses that bridge.
    """
    n = plat.n_nodes
    out = [[0] * n for _ in range(n)]
    names = plat.link_names
    for src in range(1, n):
        for dst in range(1, n):
            links = plat.route_links[src][dst]
            if src == dst or not links:
                continue
            if any(names[x] == "Host" for x in links):
                continue
            through = None
            for x in links:
                if names[x].endswith(" through"):
                    through = x
                elif names[x].endswith(" up"):
                    break
            if through is None:
                continue
            out[src][dst] = sum(1 for g in range(1, n) if through in (plat.route_links[g][RAM] or ()))
    return out
