"""Comparing results with a reference, the way every lesson checks its claims.

Introduced in lesson 01.
"""

from __future__ import annotations

import numpy as np


def largest_gap(a, b) -> float:
    """The largest absolute difference between two lists of arrays, tensors or variables.

    Args:
        a, b: sequences of the same length whose items have matching shapes.

    Returns:
        The largest ``|a_i - b_i|`` over every element of every pair, as a float.

    Raises:
        ValueError: the lists differ in length, or a pair differs in shape.
    """
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"cannot compare {len(a)} items with {len(b)}; pass equal-length lists.")
    gaps = []
    for i, (p, q) in enumerate(zip(a, b)):
        p, q = np.asarray(p), np.asarray(q)
        if p.shape != q.shape:
            raise ValueError(f"item {i} has shape {p.shape} on one side, {q.shape} on the other.")
        gaps.append(float(np.max(np.abs(p - q))) if p.size else 0.0)
    return max(gaps, default=0.0)
