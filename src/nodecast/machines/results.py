"""What ``nodecast machines list|show|diff`` report, as result objects over ``machines.compare``'s plain data.

``catalogue()`` lists the catalogue machines, GPU data sheets and hosts;
``machine_view(machine)`` summarises one machine with the source of every
value; ``machine_diff(a, b)`` compares two side by side with the ratio B/A.
Each result's ``as_dict()`` is the JSON ``--json`` prints (SI units: bytes,
bytes/s, FLOP/s, Hz, seconds); ``nodecast.report.terminal`` prints the
tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodecast.machines.schema import Machine


@dataclass
class MachineCatalogue:
    """The catalogue: one dict per machine, GPU data sheet and host; ``unreadable``: the shipped sheets that failed to load."""

    machines: list[dict[str, Any]]
    gpus: list[dict[str, Any]]
    hosts: list[dict[str, Any]]
    unreadable: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"machines": self.machines, "gpus": self.gpus, "hosts": self.hosts, "unreadable_sheets": self.unreadable}


@dataclass
class MachineView:
    """One machine's summary (``machines.compare.machine_summary``): every field with its source, links, routes."""

    summary: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return self.summary


@dataclass
class MachineDiff:
    """Two machines side by side: one row per quantity (``quantity``, ``unit``, ``a``, ``b``, ``ratio`` = b / a)."""

    a: str
    b: str
    rows: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "rows": self.rows}


def catalogue() -> MachineCatalogue:
    """Every catalogue machine, loadable GPU data sheet and host, with the sheets that could not be read."""
    from nodecast.machines import catalogue_names, load_machine
    from nodecast.machines.compare import list_rows
    from nodecast.machines.hosts import all_hosts
    from nodecast.machines.part_summary import host_rows, sheet_rows
    from nodecast.machines.sheets import loadable_sheets

    rows = list_rows([load_machine(name) for name in catalogue_names()])
    loaded, broken = loadable_sheets()
    return MachineCatalogue(rows, sheet_rows(loaded), host_rows(all_hosts()), [e.message for e in broken])


def machine_view(machine: Machine) -> MachineView:
    """``machine`` summarised for people: values, sources, data sheet and host rows, links, routes, measured values."""
    from nodecast.machines.compare import machine_summary

    return MachineView(machine_summary(machine))


def machine_diff(a: Machine, b: Machine) -> MachineDiff:
    """``a`` and ``b`` side by side (``machines.compare.diff_machines``)."""
    from nodecast.machines.compare import diff_machines

    return MachineDiff(a.name, b.name, diff_machines(a, b))
