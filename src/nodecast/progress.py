"""How long work tells its caller how far it got: the progress callbacks.

Work of many parts takes a callback and calls it as it goes: a sweep's
simulations and a comparison's forecasts (``workflows.parallel``: each job
as it finishes), calibrate's measured points (``calibrate.run_plan``: each
point as it starts). What a person sees of it, a bar at a terminal and a
line now and then in a log, is drawn by one helper above
(``nodecast.report.terminal._progress``: ``JobProgress.advance`` is a
``JobDone``, ``JobProgress.step`` a ``Step``). The callbacks are plain
functions and live here, at the ground, so that any layer, the engine and
the runtime included, can take one without importing the report; none of
them returns anything, and each is called from the thread that does or
collects the work.
"""

from __future__ import annotations

from collections.abc import Callable

#: ``done(index)``: job ``index`` (its position among the jobs given) has finished; once per job, in the order
#: the jobs finish (on Dask, not the order given).
JobDone = Callable[[int], None]

#: ``step(name, done, total)``: ``done`` of ``total`` steps are finished and the one named ``name`` starts
#: (``""`` once all are done).
Step = Callable[[str, int, int], None]
