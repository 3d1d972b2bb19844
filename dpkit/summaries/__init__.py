"""TensorBoard from a notebook (lesson 06; modules in ``dpkit/README.md``). Nothing happens on
import: TensorFlow and TensorBoard are imported when first needed. Showing TensorBoard in a
frame is :func:`dpkit.views.board.show`'s job.
"""

# ruff: noqa: F401 -- the names below are this package's API, re-exported
from dpkit.summaries.board import TensorBoard, launch, running, stop
from dpkit.summaries.logs import read
from dpkit.summaries.traces import PlacedOp, placement, profile_steps, read_profile, trace_graph
from dpkit.summaries.writers import (
    make_logged_tower_step,
    open_run,
    runs_root,
    tower_scalars,
    variable_summaries,
)
