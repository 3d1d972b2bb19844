"""The hand-sized model and machines the scaling tests compute their expected numbers on."""

import pytest

from dpkit.scaling import Hardware, Link, ModelCard

# A model whose gradients are 1e8 bytes (25 million float32 values) and whose forward pass is
# 1 GFLOP per example.
MODEL = ModelCard("test model", params=25_000_000, forward_flops=1e9)
M = 25_000_000 * 4

# Nodes of 4 devices at 1 TFLOP/s each: a fast link inside a node (10 GB/s, 1 us), a slow one
# between nodes (1 GB/s, 100 us), and each device's link to the host CPU (5 GB/s, 2 us).
INTRA, INTER, HOST = Link(1e-6, 1e10), Link(1e-4, 1e9), Link(2e-6, 5e9)
CLUSTER = Hardware("cluster", 1e12, devices_per_node=4, intra=INTRA, inter=INTER, host=HOST)
ONE_NODE = Hardware("one node", 1e12, devices_per_node=8, intra=INTRA, host=HOST)


def approx(value):
    """Equal but for rounding: the cases are exact arithmetic in float64."""
    return pytest.approx(value, rel=1e-12, abs=1e-15)
