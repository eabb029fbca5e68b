"""Machines: the schema of a compute node, its loader and the catalogue."""

from nodecast.machines.loader import catalogue_names, load_machine, load_machine_file
from nodecast.machines.schema import CPU, GPU, Link, Machine, Measured, MemoryLevel, PeakFlops
from nodecast.machines.topology import raw_rate_bps

__all__ = [
    "CPU",
    "GPU",
    "Link",
    "Machine",
    "Measured",
    "MemoryLevel",
    "PeakFlops",
    "catalogue_names",
    "load_machine",
    "load_machine_file",
    "raw_rate_bps",
]
