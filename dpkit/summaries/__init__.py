"""TensorBoard from a notebook (lesson 06; modules in ``dpkit/README.md``). Nothing happens on
import: each name below loads its module when first used (so lesson 07, which needs only
``runs_root``, does not load the TensorBoard process or the profiler readers), and TensorFlow
and TensorBoard are imported when first needed. Showing TensorBoard in a frame is
:func:`dpkit.views.board.show`'s job.
"""

import importlib

#: Each name of this package's API and the module that holds it.
HOMES = {
    "TensorBoard": "board",
    "launch": "board",
    "running": "board",
    "stop": "board",
    "read": "logs",
    "PlacedOp": "traces",
    "placement": "traces",
    "profile_steps": "traces",
    "read_profile": "traces",
    "trace_graph": "traces",
    "make_logged_tower_step": "writers",
    "open_run": "writers",
    "runs_root": "writers",
    "tower_scalars": "writers",
    "variable_summaries": "writers",
}

__all__ = sorted(HOMES)


def __getattr__(name: str):
    if name not in HOMES:
        raise AttributeError(f"module 'dpkit.summaries' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"dpkit.summaries.{HOMES[name]}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(HOMES))
