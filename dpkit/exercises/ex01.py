"""Checks of exercise 01 (one device).

One function per check cell of exercises/01_*.ipynb."""

from __future__ import annotations
