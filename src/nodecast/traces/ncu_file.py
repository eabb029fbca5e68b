"""One Nsight Compute CSV file, read: its launches and their metric values in SI units, in either layout
(wide ``--page raw``, or long, one row per metric; ``ncu``'s module docstring)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.traces.ncu_metrics import parse_unit

_IDENTITY = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name",
             "Kernel Time", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC",
             "Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
             "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"}


@dataclass
class FileData:
    """One file's launches (sorted by ID) and metric columns in SI units, aligned with ``ids``."""

    path: Path
    layout: str  # "wide" or "long"
    ids: np.ndarray
    names: list[str]
    values: dict[str, np.ndarray]
    units: dict[str, str]

    @property
    def metric_names(self) -> set[str]:
        return set(self.values)


def _find_header(lines: list[str], path: Path) -> int:
    for i, line in enumerate(lines):
        s = line.lstrip("\ufeff").strip()
        if s.startswith('"ID"') and ('"Kernel Name"' in s or '"Function Name"' in s):
            return i
    text = "\n".join(lines[:200])
    if "Invocations" in text and "Metric Name" in text:
        hint = "This looks like nvprof --metrics output; nodecast reads Nsight Compute CSV (ncu --csv)"
    elif "==PROF==" in text:
        hint = "ncu ran but printed no CSV table: did it profile any kernel, and was --csv given?"
    else:
        hint = "Export with `ncu --csv --page raw` (or `ncu --csv --metrics ...`)"
    raise InputError('no Nsight Compute CSV header (a row starting with "ID" that names "Kernel Name")',
                     path=path, hint=hint)


_THOUSANDS = r"^\s*[-+]?\d{1,3}(,\d{3})+(\.\d*)?([eE][-+]?\d+)?\s*$"


def _numeric(values: np.ndarray, path: Path | None = None, what: str = "") -> np.ndarray:
    """Metric values as floats: thousands separators removed; n/a, empty and text as NaN (vectorized).

    A comma that is not a thousands separator (``"1,5"``, ``"1.234,5"``: a
    decimal-comma locale) is an InputError rather than a silent misreading.
    """
    ser = pd.Series(values, dtype=object).astype(str)
    commas = ser.str.contains(",", regex=False)
    if commas.any():
        bad = commas & ~ser.str.match(_THOUSANDS)
        if bad.any():
            raise InputError(f"value {ser[bad].iloc[0]!r} uses a decimal comma", path=path, key=what or None,
                             hint="Export again with LC_ALL=C so that decimals use a point")
        ser = ser.str.replace(",", "", regex=False)
    return pd.to_numeric(ser.str.strip(), errors="coerce").to_numpy(dtype=np.float64)


def read_file(path: Path) -> FileData:
    try:
        raw = read_input(path, what="metrics file")  # bounded; /dev/zero refused: see nodecast.inputs
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=path) from None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    start = _find_header(lines, path)
    lines[start] = lines[start].lstrip("\ufeff")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = [h.strip() for h in next(reader)]
    col = {h: i for i, h in enumerate(header)}
    name_col = col.get("Kernel Name", col.get("Function Name"))
    id_col = col["ID"]
    long = "Metric Name" in col and "Metric Value" in col
    width = len(header)
    body: list[list[str]] = []
    units_row: list[str] | None = None
    line_no = start + 1
    for row in reader:  # the csv module's C reader; no per-value Python work here
        line_no += 1
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if row[0].startswith("=="):  # ==PROF== / ==WARNING== lines after the table
            continue
        if len(row) != width:
            raise InputError(f"row has {len(row)} fields, the header has {width}", path=path,
                             key=f"line {line_no}",
                             hint="The CSV is truncated or mixed with other output; export it again")
        if not long and not row[id_col].strip():  # the units row of --page raw
            units_row = row
            continue
        body.append(row)
    if not body:
        raise InputError("the CSV header is there but no kernel launch follows", path=path,
                         hint="Check that ncu profiled at least one kernel")
    cells = np.array(body, dtype=object)
    ids = _numeric(cells[:, id_col], path, "ID")
    if not np.isfinite(ids).all() or (ids != np.round(ids)).any():
        bad = cells[int(np.flatnonzero(~np.isfinite(ids) | (ids != np.round(ids)))[0]), id_col]
        raise InputError(f"launch ID {bad!r} is not an integer", path=path,
                         hint="Is this an Nsight Compute CSV export?")
    ids = ids.astype(np.int64)
    names_all = np.array([str(n).strip() for n in cells[:, name_col]], dtype=object)  # type: ignore[index]
    if long:
        frame = pd.DataFrame({
            "id": ids, "metric": [str(m).strip() for m in cells[:, col["Metric Name"]]],
            "unit": ([str(u).strip() for u in cells[:, col["Metric Unit"]]] if "Metric Unit" in col
                     else [""] * len(ids)),
            "raw": cells[:, col["Metric Value"]],
        })
        frame = frame[frame["metric"] != ""]
        factors = {u: parse_unit(u)[0] for u in frame["unit"].unique()}
        frame["value"] = _numeric(frame["raw"].to_numpy(), path, "Metric Value") * frame["unit"].map(factors).to_numpy()
        first = frame.drop_duplicates(["id", "metric"])
        uid = np.unique(ids)
        wide = first.pivot(index="id", columns="metric", values="value").reindex(uid)
        values = {str(m): wide[m].to_numpy(dtype=np.float64) for m in wide.columns}
        units = dict(zip(first.drop_duplicates("metric")["metric"], first.drop_duplicates("metric")["unit"],
                         strict=True))
        name_of = dict(zip(ids.tolist(), names_all.tolist(), strict=True))
        names = [name_of[i] for i in uid.tolist()]
    else:
        uid, first_row = np.unique(ids, return_index=True)
        metric_cols = [(i, h) for i, h in enumerate(header) if h not in _IDENTITY and h]
        units = {h: (units_row[i].strip() if units_row is not None else "") for i, h in metric_cols}
        values = {h: _numeric(cells[first_row, i], path, h) * parse_unit(units[h])[0] for i, h in metric_cols}
        names = names_all[first_row].tolist()
    return FileData(path, "long" if long else "wide", uid, names, values, units)
