"""The ``nodecast`` console script (and ``python -m nodecast``): the command line, stoppable from its first line.

Importing the command line (numpy, pandas, pyarrow, numba) takes a second or
more, the moment a Ctrl-C is most likely. This module imports nothing heavy
itself: it installs the stop handlers first (``nodecast._signals``: SIGINT,
SIGTERM, SIGHUP) and imports ``nodecast.cli`` inside them, so that a stop
during the imports is one line and exit code 130 (143, 129), not a traceback
or an uncaught SIGTERM.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Entry point of the console script; returns the exit code."""
    from nodecast import _signals

    with _signals.stop_on_signals():
        try:
            from nodecast.cli import main as run

            return run()
        except KeyboardInterrupt as exc:  # during the imports (the command's own stops are handled by run)
            print(f"nodecast: {_signals.describe(exc)}", file=sys.stderr)
            return _signals.exit_code(exc)


if __name__ == "__main__":
    sys.exit(main())
