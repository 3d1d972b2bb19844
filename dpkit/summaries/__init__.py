"""TensorBoard from a notebook: writers, summaries, traces, reading logs back, launching it.

Introduced in lesson 06, which uses it as ``summaries.NAME``. One concern per module:

* :mod:`~dpkit.summaries.writers`: :func:`open_run` (a fresh run folder with a ``train``
  and a ``test`` writer), :func:`variable_summaries`, :func:`tower_scalars`,
  :func:`make_logged_tower_step`, :func:`runs_root`.
* :mod:`~dpkit.summaries.traces`: :func:`trace_graph` and :func:`placement` (which device
  runs each op), :func:`profile_steps` and :func:`read_profile` (a profiler trace).
* :mod:`~dpkit.summaries.logs`: :func:`read` loads event files into plain Python
  (:class:`Logs`, :class:`Histogram`) with TensorBoard's own reader.
* :mod:`~dpkit.summaries.board`: :func:`launch` starts TensorBoard as a child process on
  127.0.0.1 and shows it inline (through a proxy where :func:`display_route` finds one);
  :func:`stop` and :func:`running`.

Nothing happens on import: TensorFlow and TensorBoard are imported when first needed.
"""

# ruff: noqa: F401 -- the names below are this package's API, re-exported
from dpkit.summaries.board import (
    HOST,
    HUB_PREFIX_ENV,
    PROXY_ENV,
    Route,
    TensorBoard,
    display_route,
    launch,
    running,
    stop,
)
from dpkit.summaries.logs import Histogram, Logs, read
from dpkit.summaries.traces import (
    PlacedOp,
    ProfiledOp,
    placement,
    profile_steps,
    read_profile,
    trace_graph,
)
from dpkit.summaries.writers import (
    EVENT_FILE_PATTERN,
    RUNS_ENV,
    Run,
    make_logged_tower_step,
    open_run,
    runs_root,
    tower_scalars,
    variable_summaries,
)
