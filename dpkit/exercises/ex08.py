"""Checks of exercise 08 (beyond one machine).

One function per check cell of exercises/08_*.ipynb."""

from __future__ import annotations
