"""Checks of exercise 07 (parameter servers).

One function per check cell of exercises/07_*.ipynb."""

from __future__ import annotations
