"""What a fit of :mod:`dpkit.published` may try (lesson 09): for each parameter of the cost model,
the values a setup's hardware card allows, the check that keeps a fit within them, and how far a
grid point sits from the card.

Bandwidths are at most the card's (a link never runs faster than sold), latencies at least the
card's, and a shared total at most the card's own figure for it; where the card gives no network
total, eight nodes at their full link.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from dpkit import cards, scaling

if TYPE_CHECKING:
    from dpkit.published import Setup


#: what a fit may set, and the values it tries, from the setup's hardware card: bandwidths
#: at most the card's (a link never runs faster than sold), latencies at least the card's,
#: the shared totals at most the card's own figure (a card with no network total: 8 nodes at
#: their full link)
PARAMETERS = {
    "intra_bw": "link inside a node, bytes/s: the card's x 1/8, 1/4, 1/2, 1",
    "inter_bw": "each node's network link, bytes/s: the card's x 1/8, 1/4, 1/2, 1",
    "host_bw": "each device's link to the CPU, bytes/s: the card's x 1/8, 1/4, 1/2, 1",
    "intra_lat": "latency inside a node, s: the card's x 1, 10, 100, 1000",
    "inter_lat": "latency between nodes, s: the card's x 1, 10, 100, 1000",
    "host_total": "all devices to the CPU together: devices x host link x 1/8 .. 1",
    "net_total": "the network for all nodes together: the card's total x 1/8 .. 1 (no total on "
    "the card: 8 nodes x node link)",
    "overlap": "fraction of the exchange that may hide: 0, 1/4, 1/2, 3/4, 1",
    "fixed": "seconds every multi-device step pays: 0, 1, 3, 10, 30 ms",
}
FRACTIONS, FACTORS = (1 / 8, 1 / 4, 1 / 2, 1), (1, 10, 100, 1000)
#: a parameter set is consistent with the fit rows if its RMS error is within this of the
#: best's (published tables vary by about 2 points: the DGX-1's Inception V3 runs at 100.2%)
TOLERANCE = 0.02


def card_value(setup: Setup, name: str) -> float:
    """The hardware card's value of a fitted parameter (the bound the fit keeps to)."""
    hw = cards.HARDWARE[setup.hardware]
    if name in ("overlap", "fixed"):
        return {"overlap": 1.0, "fixed": 0.0}[name]
    if name == "host_total":
        return hw.devices_per_node * hw.link_to_host().bandwidth_bytes_per_s
    if name == "net_total":  # the card's own figure; a card without one: 8 nodes at full link
        if hw.network_total_bytes_per_s is not None:
            return hw.network_total_bytes_per_s
        return 8 * hw.link_between_nodes().bandwidth_bytes_per_s
    link = {"intra": hw.intra, "inter": hw.inter, "host": hw.host or hw.intra}[name.split("_")[0]]
    if link is None:
        raise ValueError(
            f"{setup.name}: its card {setup.hardware!r} has no {name.split('_')[0]} link."
        )
    return link.bandwidth_bytes_per_s if name.endswith("bw") else link.latency_s


def grid(setup: Setup) -> dict:
    """The values a fit tries for each of the setup's fitted parameters (:data:`PARAMETERS`)."""
    out = {}
    for name in setup.fitted:
        if name not in PARAMETERS:
            raise ValueError(f"unknown parameter {name!r}; choose from {', '.join(PARAMETERS)}.")
        if name == "overlap":
            out[name] = [0, 0.25, 0.5, 0.75, 1.0]
        elif name == "fixed":
            out[name] = [t * 1e-3 for t in (0, 1, 3, 10, 30)]
        elif name.endswith("lat"):
            out[name] = [card_value(setup, name) * f for f in FACTORS]
        else:
            out[name] = [card_value(setup, name) * f for f in FRACTIONS]
    return out


def check(setup: Setup, params: dict) -> None:
    """Refuse a parameter the hardware card does not allow: a bandwidth above the card's,
    a latency below it, an overlap outside 0..1, a negative fixed cost."""
    for name, value in params.items():
        card = card_value(setup, name)
        if name.endswith("lat") or name == "fixed":
            bad, bound = value < card * (1 - 1e-9), f"at least the card's {card:g}"
        elif name == "overlap":
            bad, bound = not 0 <= value <= 1, "from 0 to 1"
        else:
            bad, bound = value > card * (1 + 1e-9), f"at most the card's {card:g}"
        if bad:
            raise ValueError(f"{setup.name}: {name}={value:g} is outside the card: use {bound}.")


def hardware_with(setup: Setup, params: dict) -> scaling.Hardware:
    """The setup's hardware card with ``params`` (keys of :data:`PARAMETERS`) put in."""
    check(setup, params)
    hw = cards.HARDWARE[setup.hardware]
    links = {"intra": hw.intra, "inter": hw.inter, "host": hw.host}
    totals = {}
    for key, value in params.items():
        if key in ("overlap", "fixed"):
            continue
        if key in ("host_total", "net_total"):
            name = "host_total_bytes_per_s" if key == "host_total" else "network_total_bytes_per_s"
            totals[name] = value
            continue
        name, what = key.split("_")
        link = links[name] or hw.intra
        field_name = "bandwidth_bytes_per_s" if what == "bw" else "latency_s"
        links[name] = replace(link, **{field_name: value})
    return replace(hw, **links, **totals)


def departure(setup: Setup, point: dict) -> int:
    """How far ``point`` sits from the hardware card, in steps of the setup's :func:`grid`
    (the card's own value is a grid value of every parameter: :func:`card_value`)."""
    values, steps = grid(setup), 0
    for name, value in point.items():
        tried = np.array(values[name], dtype=float)
        at, card = (int(np.argmin(abs(tried - v))) for v in (value, card_value(setup, name)))
        steps += abs(at - card)
    return steps
