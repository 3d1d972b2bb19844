"""Checks of exercise 02 (towers).

One function per check cell of exercises/02_*.ipynb."""

from __future__ import annotations
