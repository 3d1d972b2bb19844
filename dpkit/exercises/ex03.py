"""Checks of exercise 03 (gradient averaging).

One function per check cell of exercises/03_*.ipynb."""

from __future__ import annotations
