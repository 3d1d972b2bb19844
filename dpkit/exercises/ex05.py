"""Checks of exercise 05 (throughput and scaling).

One function per check cell of exercises/05_*.ipynb."""

from __future__ import annotations
