"""pytest plugin: nbval compares checked cells' outputs but never stderr.

nbval compares stderr like any other output, but TensorFlow and Keras write warnings
there that vary between machines and versions. Checked cells state their claims on
stdout. Loaded by the root conftest.py.

How: nbval's documented hook ("Skipping certain output types" in its documentation, and
its maintainer's answer in computationalmodelling/nbval#88): a ``pytest_collectstart``
that adds ``"stderr"`` to the notebook collector's ``skip_compare``. nbval turns each
stream output into ``{"output_type": "stream", <name>: text}`` before comparing and drops
every key in ``skip_compare`` (``output_type`` already is), so a stderr stream leaves
nothing to compare, on either side.
"""

import os

from dpkit.plumbing import contract

# Kernels started by nbval inherit these: quiet TensorFlow, reproducible CPU maths.
contract.quiet_tensorflow(os.environ)
# Nobody watches these kernels: dpkit.views.widgets prints text instead of widgets.
os.environ.setdefault(contract.WIDGETS, "text")

#: Output keys nbval must not compare, on top of its own list.
SKIP_COMPARE = ("stderr",)


def pytest_collectstart(collector):
    """nbval's notebook collector (only it has ``skip_compare``) ignores stderr."""
    if collector.path.suffix == ".ipynb" and hasattr(collector, "skip_compare"):
        collector.skip_compare += SKIP_COMPARE
