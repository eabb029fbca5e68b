"""Read-only, column-at-a-time access to profiler SQLite exports (nsys, nvprof).

Files are opened through a ``file:...?mode=ro&immutable=1`` URI: nothing is
ever written, and no journal or WAL file appears next to the input.

Bulk reads stream a query's rows straight into preallocated numpy buffers.
When the ADBC SQLite driver (``adbc-driver-sqlite``) is installed it is used
for them: it hands over Arrow batches decoded in C, about 2.5x faster than
the ``sqlite3`` module on a 2-million-row kernel table (2.6 s against 6.4 s
for 12 columns on this 2-core machine; a 10-million-copy nvprof file loads in
29 s against 52 s, peak memory about 140 B per op either way). Without it,
``sqlite3`` rows are converted in chunks with ``np.fromiter``; both paths give
identical arrays. Text where a number belongs, and numbers too large for
their column (a device id beyond int16), are InputErrors naming table and
column; the ADBC path leaves their diagnosis to the sqlite3 path.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from nodecast.errors import InputError
from nodecast.values import as_int

#: First 16 bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"

#: Set to False to force the sqlite3 fallback (tests compare both paths).
USE_ADBC = True

_CHUNK_ROWS = 1 << 14


def _adbc() -> ModuleType | None:
    """The ADBC SQLite driver module (its low-level API), or None when it is not installed or disabled."""
    if not USE_ADBC:
        return None
    try:
        import adbc_driver_sqlite
    except ImportError:
        return None
    return adbc_driver_sqlite


def readonly_uri(path: str | Path) -> str:
    """``file:`` URI opening ``path`` read-only and immutable (no lock, no journal)."""
    return Path(path).resolve().as_uri() + "?mode=ro&immutable=1"


#: sqlite3's errors for text that is not UTF-8 (naming the result column) and for a column the table lacks.
_NOT_UTF8 = re.compile(r"Could not decode to UTF-8 column '(.*?)' with text")
_NO_COLUMN = re.compile(r"no such column: (\S+)")


def _table_of(sql: str | None) -> str | None:
    """The table a one-table query reads (``... FROM "T" ...``), None for none."""
    found = re.search(r'\bFROM\s+"?([A-Za-z_][A-Za-z0-9_]*)"?', sql or "", re.IGNORECASE)
    return found.group(1) if found else None


def _bytes_shown(raw: bytes, limit: int = 48) -> str:
    """``kernel\\xff\\x80``: the first ``limit`` bytes of a value as Python writes them, ``…`` when cut."""
    return repr(raw[:limit])[2:-1] + ("…" if len(raw) > limit else "")


def _corrupt(path: Path, exc: BaseException) -> InputError:
    return InputError(
        f"the SQLite database is corrupt or truncated ({exc})",
        path=path,
        hint="Copy or export the profile again; the file may have been cut short",
    )


class SqliteExport:
    """A profiler SQLite export opened read-only.

    Use as a context manager. Every database error is re-raised as an
    InputError naming the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._adbc_db: Any = None
        self._adbc_con: Any = None
        try:
            self.con = sqlite3.connect(readonly_uri(self.path), uri=True)
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from None
        try:
            rows = self.con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        except sqlite3.DatabaseError as exc:
            self.con.close()
            raise _corrupt(self.path, exc) from None
        self.tables: set[str] = {r[0] for r in rows}
        self._columns: dict[str, set[str]] = {}
        self._strings: dict[str, dict[int, str]] = {}

    def __enter__(self) -> SqliteExport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close both connections."""
        db, con, self._adbc_db, self._adbc_con = self._adbc_db, self._adbc_con, None, None
        try:
            for handle in (con, db):
                if handle is not None:
                    handle.close()
        except RuntimeError:  # "open AdbcStatement": a stop signal cut a read short; the process is ending
            pass
        finally:
            self.con.close()

    @contextmanager
    def _errors(self, sql: str | None = None) -> Iterator[None]:
        """Turn database errors into InputError: text that is not UTF-8, and a column the query ``sql`` names
        that its table lacks (an edited export), each say so, naming table and column; anything else (a
        truncated file shows up mid-read) is a corrupt database."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self._error(exc, sql) from None

    def _error(self, exc: sqlite3.DatabaseError, sql: str | None) -> InputError:
        """The InputError for database error ``exc`` of the query ``sql`` (see ``_errors``)."""
        table = _table_of(sql)
        if table is not None and table in self.tables:
            found = _NOT_UTF8.match(str(exc))
            if found:
                return self._not_utf8(table, found.group(1)) or _corrupt(self.path, exc)
            found = _NO_COLUMN.match(str(exc))
            if found:
                return InputError(
                    f"the table has no {found.group(1).strip(chr(34))} column, which nodecast needs",
                    path=self.path,
                    key=table,
                    hint="The export is incomplete or was edited; export the profile again",
                )
        return _corrupt(self.path, exc)

    def _not_utf8(self, table: str, expr: str) -> InputError | None:
        """InputError naming the first column of ``table`` that ``expr`` reads (any column when it names none)
        holding text that is not UTF-8: how many rows, the first one's rowid and bytes. None if none does.

        Only called after a read failed; the text is read as bytes (``CAST AS BLOB``), checked in Python.
        """
        for column in self._columns_in(table, expr) or sorted(self.columns(table)):
            count, first = 0, ""
            try:
                cur = self.con.execute(f'SELECT rowid, CAST("{column}" AS BLOB) FROM "{table}" '
                                       f"WHERE typeof(\"{column}\") = 'text' ORDER BY rowid")
                for rowid, raw in cur:
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError:
                        count += 1
                        first = first or f"rowid {rowid}, {_bytes_shown(raw)}"
            except sqlite3.DatabaseError:  # a table without rowids, or a damaged page: nothing more to say
                continue
            if count:
                return InputError(
                    f"{count:,} {'row holds' if count == 1 else 'rows hold'} text that is not UTF-8 (first: {first})",
                    path=self.path,
                    key=f"{table}.{column}",
                    hint="No profiler writes such text: the export was damaged or edited; export the profile again",
                )
        return None

    # -- schema -----------------------------------------------------------------------
    def columns(self, table: str) -> set[str]:
        """Column names of a table (empty when the table does not exist)."""
        if table not in self.tables:
            return set()
        if table not in self._columns:
            with self._errors():
                info = self.con.execute(f'PRAGMA table_info("{table}")').fetchall()
            self._columns[table] = {r[1] for r in info}
        return self._columns[table]

    def require(self, table: str, *names: str) -> None:
        """InputError naming the columns of ``names`` that ``table`` lacks.

        For columns without which the table's rows mean nothing (times, the
        bytes of a copy): reading them as a default would give silently wrong
        results (every copy 0 B), where ``col`` is for columns that older
        schemas really lack.
        """
        missing = [c for c in names if c not in self.columns(table)]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            raise InputError(
                f"the table has no {', '.join(missing)} column{plural}, which nodecast needs",
                path=self.path,
                key=table,
                hint="The export is incomplete or was edited; export the profile again",
            )

    def col(self, table: str, name: str, default: int = -1) -> str:
        """SQL for a column that older schemas may lack: its quoted name, or ``default`` when absent."""
        return f'"{name}"' if name in self.columns(table) else str(int(default))

    def code(self, table: str, name: str, default: int = -1) -> str:
        """SQL for an enum-code column, limited to 0..255 (anything else reads -1) so it fits an int16 buffer."""
        if name not in self.columns(table):
            return str(int(default))
        return f'CASE WHEN "{name}" BETWEEN 0 AND 255 THEN "{name}" ELSE -1 END'

    def count(self, table: str, where: str = "") -> int:
        """Number of rows of a table (0 when it does not exist)."""
        if table not in self.tables:
            return 0
        sql = f'SELECT count(*) FROM "{table}"' + (f" WHERE {where}" if where else "")
        with self._errors(sql):
            return int(self.con.execute(sql).fetchone()[0])

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a small query (metadata, string tables)."""
        with self._errors(sql):
            return self.con.execute(sql, params).fetchall()

    def string_table(self, table: str, id_col: str, value_col: str = "value") -> dict[int, str]:
        """An id -> string table (``StringIds``, ``StringTable``) as a dict.

        Rows with a NULL id or value name nothing and are left out; an id that
        is not an integer (text, a real) is an InputError naming table, column and row.
        """
        if table not in self.tables:
            return {}
        if table not in self._strings:
            # Checked first: SQLite reads a quoted name that is no column as a string ("value" for every name).
            self.require(table, id_col, value_col)
            rows = self.rows(f'SELECT "{id_col}", "{value_col}" FROM "{table}"')
            ids = [i for i, _ in rows]
            if not all(type(i) is int for i in ids):  # NOTE: checked one by one only when needed (tables of 10^5 rows)
                ids = [None if i is None else as_int(i, path=self.path, field=f"{table}.{id_col}", row=r)
                       for r, i in enumerate(ids, 1)]
            self._strings[table] = {i: str(v) for i, (_, v) in zip(ids, rows, strict=True)
                                    if i is not None and v is not None}
        return self._strings[table]

    def api_calls(self, tables: Sequence[str]) -> np.ndarray | None:
        """(correlationId, start, end) of every CPU API call in ``tables``, in table order.

        A (3, n) int64 array, or None when no table has rows. List runtime
        tables first: on a shared correlation id the first record wins.
        """
        usable = [t for t in tables if {"correlationId", "start", "end"} <= self.columns(t)]
        sizes = [self.count(t) for t in usable]
        if not sum(sizes):
            return None
        api = np.empty((3, sum(sizes)), dtype=np.int64)  # one buffer: no concatenation copy
        lo = 0
        for table, m in zip(usable, sizes, strict=True):
            if m:
                rows = slice(lo, lo + m)
                self.read_into(table, [("correlationId", -1), ("start", 0), ('"end"', 0)], list(api[:, rows]))
                lo += m
        return api

    def read_ops(
        self,
        table: str,
        cols: dict[str, np.ndarray],
        rows: slice,
        extra: Sequence[tuple[str, int, np.ndarray]] = (),
        stream_sql: str | None = None,
    ) -> None:
        """Read an activity table into rows ``rows`` of the Trace buffers ``cols``.

        Fills start_ns, end_ns, device, stream and correlation (the columns all
        CUPTI activity tables share), plus ``extra`` (SQL, default, buffer)
        triples. ``stream_sql`` overrides the stream expression.
        """
        self.require(table, "start", "end")
        exprs = [
            ("start", 0),
            ('"end"', 0),
            (self.col(table, "deviceId", 0), 0),
            (stream_sql or self.col(table, "streamId"), -1),
            (self.col(table, "correlationId"), -1),
        ]
        outs = [cols[c][rows] for c in ("start_ns", "end_ns", "device", "stream", "correlation")]
        for sql, default, out in extra:
            exprs.append((sql, default))
            outs.append(out)
        self.read_into(table, exprs, outs)

    # -- bulk reads -------------------------------------------------------------------
    def read_into(
        self,
        table: str,
        exprs: Sequence[tuple[str, int]],
        outs: Sequence[np.ndarray],
        where: str = "",
    ) -> None:
        """Stream ``SELECT exprs FROM table`` into the buffers ``outs`` (one per expression).

        Each expression is wrapped in ``coalesce(expr, default)`` so that NULLs
        become the given default; values are cast to each buffer's dtype on
        assignment. The buffers must be exactly as long as the query's result.
        Text where a number belongs, or a number too large for its buffer
        (a device id beyond int16), is an InputError naming table and column.
        """
        select = ", ".join(f"coalesce({e}, {int(d)})" for e, d in exprs)
        sql = f'SELECT {select} FROM "{table}"' + (f" WHERE {where}" if where else "")
        n = len(outs[0]) if outs else 0
        if n == 0:
            return
        driver = _adbc()
        if driver is not None:
            try:
                got = self._read_adbc(driver, sql, outs)
            except Exception:  # noqa: BLE001 - any driver trouble: sqlite3 decides (and reports) below
                got = -1
            if got == n:
                return
        try:
            got = self._read_sqlite3(sql, outs)
        except _OutOfRange as exc:
            expr = exprs[exc.index][0]
            info = np.iinfo(outs[exc.index].dtype)
            raise InputError(
                f"value {exc.value} is out of range (nodecast keeps this field in {info.min}..{info.max})",
                path=self.path,
                key=f"{table}.{'/'.join(self._columns_in(table, expr)) or expr}",
                hint="The export is damaged or was edited; export the profile again",
            ) from None
        if got != n:
            # Both a short read and a non-integer value end the read early: name the
            # column when a value is the cause, rather than blame a concurrent writer.
            self._check_numeric(table, exprs)
            if got < 0:
                raise InputError(
                    "unexpected non-integer value in the database",
                    path=self.path,
                    key=table,
                    hint="The export may be damaged; export it again",
                )
            raise InputError(
                f"table {table} changed while it was read ({got} rows, expected {n})",
                path=self.path,
                hint="Read a copy of the file that no process is writing",
            )

    def _columns_in(self, table: str, expr: str) -> list[str]:
        """The table's columns an SQL expression reads, by name (for error messages)."""
        return sorted(c for c in self.columns(table) if re.search(rf"\b{re.escape(c)}\b", expr))

    def _check_numeric(self, table: str, exprs: Sequence[tuple[str, int]]) -> None:
        """InputError naming the first column read by ``exprs`` that holds text, a blob, or a
        real that no 64-bit integer can hold (inf, 1e300), with the count and the first such row.

        Only called after a read failed, so the extra queries cost nothing on good files.
        """
        seen: set[str] = set()
        checks = (
            ("typeof({c}) IN ('text', 'blob')", "hold text where a number belongs"),
            # NOTE: SQLite stores NaN as NULL (read as the default); inf and huge reals stay REAL.
            ("typeof({c}) = 'real' AND abs({c}) >= 9223372036854775808.0", "hold a number beyond a 64-bit integer"),
        )
        for expr, _ in exprs:
            for column in self._columns_in(table, expr):
                if column in seen:
                    continue
                seen.add(column)
                for cond, what in checks:
                    where = cond.format(c=f'"{column}"')
                    count = self.rows(f'SELECT count(*) FROM "{table}" WHERE {where}')[0][0]
                    if count:
                        raise InputError(
                            f"{count:,} rows {what} (first: {self._first(table, column, where)})",
                            path=self.path,
                            key=f"{table}.{column}",
                            hint="The export is damaged or was edited; export the profile again",
                        )

    def _first(self, table: str, column: str, where: str) -> str:
        """``'abc' in rowid 12``: the first value matching ``where`` and its rowid (the value alone
        for a table without rowids)."""
        try:
            rowid, value = self.con.execute(
                f'SELECT rowid, quote("{column}") FROM "{table}" WHERE {where} ORDER BY rowid LIMIT 1'
            ).fetchone()
        except sqlite3.DatabaseError:
            (value,) = self.rows(f'SELECT quote("{column}") FROM "{table}" WHERE {where} LIMIT 1')[0]
            return str(value)
        return f"{value} in rowid {rowid}"

    def _read_adbc(self, driver: ModuleType, sql: str, outs: Sequence[np.ndarray]) -> int:
        """Rows read into ``outs`` through the ADBC driver; -1 on anything the sqlite3 path must diagnose.

        NOTE: through adbc_driver_manager's low-level objects, not its DB-API
        module. The DB-API cursor swaps in the manager's own SIGINT handler
        while a query executes: Ctrl-C then only asked the driver to cancel,
        which the SQLite driver does not implement (the NotSupportedError
        ended here, the sqlite3 path read the table again and the run finished
        with exit 0), and the manager's interrupt thread called that cancel
        callback after the read had returned and freed it (segmentation
        faults, in whatever the main thread did next, such as graph/build.py's
        ``_csr``). Its objects are also Python code that a stop can cut in
        half (``Exception ignored in Cursor.__del__`` at exit). Here Python's
        own handler stays in place: a stop during the driver's C code raises
        as soon as that returns (after the query's first batch, or between batches).
        """
        import adbc_driver_manager as adbc
        import pyarrow as pa

        if self._adbc_con is None:
            self._adbc_db = driver.connect(readonly_uri(self.path))
            self._adbc_con = adbc.AdbcConnection(self._adbc_db)
        stmt = handle = reader = None
        try:
            stmt = adbc.AdbcStatement(self._adbc_con)
            stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(_CHUNK_ROWS)})
            stmt.set_sql_query(sql)
            handle, _ = stmt.execute_query()
            # The import that adbc_driver_manager's DB-API uses itself (pyarrow >= 14); it moves the stream out of
            # the handle, whose release is then a no-op.
            reader = pa.RecordBatchReader._import_from_c(handle.address)  # noqa: SLF001
            i = 0
            n = len(outs[0])
            for batch in reader:
                m = batch.num_rows
                if i + m > n:
                    return -1
                for j, out in enumerate(outs):
                    col = batch.column(j)
                    if col.null_count:  # cannot happen after coalesce; never trust a NaN cast
                        return -1
                    values = col.to_numpy(zero_copy_only=False)
                    if values.dtype != np.int64 or not _fits(values, out.dtype):
                        return -1  # text, reals or out-of-range values: the sqlite3 path reports them
                    out[i : i + m] = values
                i += m
            return i
        finally:
            # The stream before its statement: releasing it afterwards reads freed driver state.
            if reader is not None:
                reader.close()
            if handle is not None:
                handle.release()
            if stmt is not None:
                stmt.close()

    def _read_sqlite3(self, sql: str, outs: Sequence[np.ndarray]) -> int:
        """Rows read into ``outs``: fewer than asked when the query ended early, -1 on a
        value numpy cannot make an integer of; ``_OutOfRange`` when one does not fit its buffer."""
        n = len(outs[0])
        dtype = np.dtype([(f"c{j}", np.int64) for j in range(len(outs))])
        i = 0
        with self._errors(sql):
            cur = self.con.execute(sql)
            while i < n:
                try:
                    chunk = np.fromiter(cur, dtype=dtype, count=min(_CHUNK_ROWS, n - i))
                except ValueError:  # fewer rows than counted, or text numpy cannot parse
                    return i
                except (TypeError, OverflowError):  # a blob, or a real beyond int64
                    return -1
                m = len(chunk)
                for j, out in enumerate(outs):
                    values = chunk[f"c{j}"]
                    if not _fits(values, out.dtype):
                        info = np.iinfo(out.dtype)
                        raise _OutOfRange(j, int(values[(values < info.min) | (values > info.max)][0]))
                    out[i : i + m] = values
                i += m
                if m == 0:
                    break
            extra = cur.fetchone()
        return i if extra is None else i + 1


class _OutOfRange(Exception):
    """Value ``value`` of expression ``index`` does not fit the buffer it is read into."""

    def __init__(self, index: int, value: int) -> None:
        super().__init__(index, value)
        self.index = index
        self.value = value


def _fits(values: np.ndarray, dtype: np.dtype) -> bool:
    """Whether int64 ``values`` fit ``dtype`` unchanged (numpy would wrap them silently)."""
    if dtype == np.int64 or len(values) == 0:
        return True
    info = np.iinfo(dtype)
    return bool(values.min() >= info.min and values.max() <= info.max)
