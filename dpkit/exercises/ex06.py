"""Checks of exercise 06 (TensorBoard).

One function per check cell of exercises/06_*.ipynb."""

from __future__ import annotations
