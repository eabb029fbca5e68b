"""Machines: the schema of a compute node, its loader and the catalogue; GPU data sheets, hosts, composition."""

from nodecast.machines.compose import compose_machine
from nodecast.machines.hosts import load_host
from nodecast.machines.loader import catalogue_names, load_machine_file
from nodecast.machines.lookup import load_machine
from nodecast.machines.names import find_sheet, match_sheet, normalise_gpu_name
from nodecast.machines.parts import GpuSheet, Host, TargetLimits
from nodecast.machines.resolve import resolve_source
from nodecast.machines.schema import CPU, GPU, Link, Machine, Measured, MemoryLevel, PeakFlops
from nodecast.machines.sheets import load_sheet
from nodecast.machines.topology import raw_rate_bps

__all__ = [
    "CPU",
    "GPU",
    "GpuSheet",
    "Host",
    "Link",
    "Machine",
    "Measured",
    "MemoryLevel",
    "PeakFlops",
    "TargetLimits",
    "catalogue_names",
    "compose_machine",
    "find_sheet",
    "load_host",
    "load_machine",
    "load_machine_file",
    "load_sheet",
    "match_sheet",
    "normalise_gpu_name",
    "raw_rate_bps",
    "resolve_source",
]
