"""``nodecast record`` at the terminal: one line on stderr (the program's own output stays on stdout), then notes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from nodecast.record import RecordResult, summary
from nodecast.report.terminal import render
from nodecast.text import LINE_LIMIT, shown


@render.register(RecordResult)
def _(result: RecordResult, console: Any = None, output: str | Path | None = None, file: TextIO | None = None) -> None:
    """``nodecast record: wrote OUT: 120 kernels, ...`` with the program's exit code when not 0, then one line per note.

    ``console`` is not used: the lines go to ``file`` (stderr by default), as plain text.
    """
    file = file or sys.stderr
    line = f"nodecast record: wrote {shown(output)}: {summary(result)}"
    if result.exit_code:
        line += f"; the program exited with code {result.exit_code}"
    print(shown(line, LINE_LIMIT), file=file)
    for note in result.notes:
        print(shown(f"nodecast record: note: {note}", LINE_LIMIT), file=file)
