"""Whether a notebook front end is attached: what the views (and TensorBoard's frame) ask first.

A kernel cannot tell whether a browser is attached, so :func:`frontend` guesses: inside a
Jupyter kernel, yes. ``DPKIT_WIDGETS=text`` (the test runners and ``tools/run_notebooks.py``
set it: nobody watches their kernels) or ``=widgets`` overrides the guess.
"""

from __future__ import annotations

import importlib.util
import os

from dpkit.plumbing import contract


def shell():
    """The running IPython shell, or ``None`` (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def frontend(*, widgets: bool = False) -> bool:
    """Whether what a cell displays will be seen: inside a Jupyter kernel (and, with
    ``widgets=True``, ipywidgets installed), unless ``DPKIT_WIDGETS`` says otherwise."""
    choice = os.environ.get(contract.WIDGETS, "").strip().lower()
    if choice in ("text", "0", "off", "no"):
        return False
    if choice in ("widgets", "1", "on", "yes"):
        return True
    if widgets and importlib.util.find_spec("ipywidgets") is None:
        return False
    return hasattr(shell(), "kernel")
