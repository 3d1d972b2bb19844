"""Checks of exercise 09 (predicting scale).

One function per check cell of exercises/09_*.ipynb."""

from __future__ import annotations
