"""Checks of exercise 04 (all-reduce and MirroredStrategy).

One function per check cell of exercises/04_*.ipynb."""

from __future__ import annotations
