"""Checks of exercise 10 (making data parallelism pay).

One function per check cell of exercises/10_*.ipynb."""

from __future__ import annotations
