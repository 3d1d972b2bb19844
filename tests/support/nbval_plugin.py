"""pytest plugin: nbval compares checked cells' outputs but never stderr.

nbval compares stderr like any other output, but TensorFlow and Keras write warnings
there that vary between machines and versions. Checked cells state their claims on
stdout. Loaded by the root conftest.py.
"""

import os

# Kernels started by nbval inherit these: quiet TensorFlow, reproducible CPU maths.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
# Nobody watches these kernels: dpkit.views.widgets prints text instead of widgets.
os.environ.setdefault("DPKIT_WIDGETS", "text")


def _drop_stderr(outputs):
    return [
        o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
    ]


try:
    from nbval import plugin as _nbval
except ImportError:  # nbval not installed: the unit tests still run
    pass
else:
    _compare = _nbval.IPyNbCell.compare_outputs

    def _compare_without_stderr(self, test, ref, skip_compare=None):
        return _compare(self, _drop_stderr(test), _drop_stderr(ref), skip_compare)

    _nbval.IPyNbCell.compare_outputs = _compare_without_stderr
