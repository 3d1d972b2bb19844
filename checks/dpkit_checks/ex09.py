"""Checks of exercise 09 (predicting scale).

One function per check cell of exercises/09_*.ipynb. The references are hand computations
written out here in float64 (the ring's bytes and messages, the step, the efficiency), not
:mod:`dpkit.scaling`: while a check runs the learner's code, the functions of dpkit that
would do the work (``scaling.ring_bytes``, ``exchange``, ``step``, ``predict``,
``step_seconds``, ``hidden_seconds``, ``Link.seconds`` and ``published.predict_row``) are
switched off.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace

import numpy as np

from dpkit import cards, checking, published, scaling
from dpkit_checks import switching

#: the backward pass's share of the compute: what the exchange can hide behind (lesson 09)
BACKWARD = 2 / 3


@contextlib.contextmanager
def _dpkit_off():
    names = ("ring_bytes", "exchange", "step", "predict", "step_seconds", "hidden_seconds")
    with (
        switching.switched_off(scaling, *names),
        switching.switched_off(scaling.Link, "seconds"),
        switching.switched_off(published, "predict_row", "predictions", "compare"),
        switching.switched_off(sys.modules[__name__], "ring", "step", "reference_comparison"),
    ):
        yield


def _call(what, function, *args, **kwargs):
    try:
        with _dpkit_off():
            return function(*args, **kwargs)
    except AssertionError:
        raise
    except Exception as error:
        raise AssertionError(f"{what}: raised {type(error).__name__}: {error}") from None


def _number(what, value, name="") -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AssertionError(f"{what}: {name or 'yours'} is {value!r}, not a number") from None


def _same(a, b) -> bool:
    return bool(checking.agree(a, b))


def ring(n, nbytes, bandwidth, latency) -> float:
    """Seconds of a ring all-reduce, by hand: ``2 (N-1)/N M / B + 2 (N-1) alpha``."""
    return 2 * (n - 1) / n * nbytes / bandwidth + 2 * (n - 1) * latency


def step(compute, n, nbytes, bandwidth, latency, overlap=0.0) -> tuple[float, float]:
    """(seconds, weak-scaling efficiency) of one step, by hand."""
    exchange = ring(n, nbytes, bandwidth, latency)
    seconds = compute + exchange - min(overlap * exchange, BACKWARD * compute)
    return seconds, compute / seconds


# --- check 1: the ring's time ---------------------------------------------------------------

#: (devices, bytes, bandwidth bytes/s, latency s): N from 1 to 1000, no bytes, no latency
RING_CASES = [
    (1, 102e6, 12e9, 5e-6),
    (2, 102e6, 12e9, 5e-6),
    (3, 4.1e6, 470e6, 957e-6),
    (8, 553e6, 20e9, 5e-6),
    (5, 0.0, 1e9, 50e-6),
    (64, 247e6, 3.125e9, 0.0),
    (1000, 95e6, 1.25e9, 50e-6),
]


def _ring_suspects(n, m, b, a):
    return [
        (2 * m / b + 2 * (n - 1) * a, "the bytes are 2 M: each sends 2 (N-1)/N M, not 2 M"),
        ((n - 1) / n * m / b + 2 * (n - 1) * a, "the bytes miss the factor 2 (two phases)"),
        (2 * (n - 1) / n * m / b, "the latency term is missing: 2 (N-1) messages of alpha each"),
        (2 * (n - 1) / n * m / b + (n - 1) * a, "(N-1) latencies; the ring sends 2 (N-1)"),
        (2 * (n - 1) / n * m / b + 2 * n * a, "2 N latencies; the ring sends 2 (N-1)"),
        (2 * (n - 1) / n * m / b + a, "one latency; the ring sends 2 (N-1) messages"),
        (2 * (n - 1) / n * m * b + 2 * (n - 1) * a, "bytes times bandwidth; divide by it"),
        (2 * (n - 1) * m / b + 2 * (n - 1) * a, "2 (N-1) M bytes: each step moves M/N, not M"),
    ]


def check_ring_seconds(ring_seconds) -> str:
    """Check ``ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s)``.

    Varies the device count (1, 2, 3, 5, 8, 64, 1000: one device sends nothing), the bytes
    (none to 553 MB), the bandwidth and the latency (0 included). The reference is the
    formula computed here in float64; dpkit.scaling is switched off.
    """
    for n, m, b, a in RING_CASES:
        what = f"{n} device(s), {m / 1e6:g} MB at {b / 1e9:g} GB/s, latency {a * 1e6:g} us"
        got = _number(what, _call(what, ring_seconds, n, m, b, a))
        want = ring(n, m, b, a)
        if n == 1:
            assert got == 0, f"{what}: yours {got:.4g} s; one device exchanges nothing: 0 s"
        if _same(got, want):
            continue
        hint = next((h for v, h in _ring_suspects(n, m, b, a) if _same(got, v)), "")
        raise AssertionError(
            f"{what}: yours {got * 1e3:.4g} ms, want {want * 1e3:.4g} ms"
            + (f": {hint}" * bool(hint))
        )
    return f"Check 1 passed: the ring's time for {len(RING_CASES)} cases, 1 to 1000 devices"


# --- check 2: the step and its efficiency ---------------------------------------------------

#: (compute s, devices, bytes, bandwidth, latency, overlap or None for the default)
STEP_CASES = [
    (0.28, 1, 102e6, 3.125e9, 5e-6, 0.5),  # one device: the compute alone
    (0.28, 8, 102e6, 3.125e9, 5e-6, None),  # the default: nothing hidden
    (0.28, 16, 102e6, 3.125e9, 5e-6, 0.5),  # half hidden, under the backward pass
    (0.02, 4, 247e6, 6e9, 10e-6, 1.0),  # all may hide, but the backward pass is shorter
    (0.4156, 8, 553e6, 20e9, 5e-6, 0.25),
    # capped again, below full overlap (0.75 of the exchange is more than the backward pass),
    # latency large: an overlap applied after the cap shows here only
    (0.012, 3, 4.1e6, 470e6, 957e-6, 0.75),
]


def _step_suspects(c, n, m, b, a, o):
    e = ring(n, m, b, a)
    right = step(c, n, m, b, a, o)[0]
    seconds = [
        (
            c + e - o * e,
            "nothing caps the hidden part; it hides behind the backward pass "
            "only, at most 2/3 of the compute",
        ),
        (c + e - min(o * e, c), "the cap is the whole compute; the backward pass is 2/3 of it"),
        (
            c + e - o * min(e, BACKWARD * c),
            "the overlap multiplies what is left after the cap; it takes its share of the "
            "exchange first, and the backward pass caps that: min(overlap * exchange, 2/3 compute)",
        ),
        (
            c + e - min((1 - o) * e, BACKWARD * c),
            "overlap is the share that hides, not the share left exposed",
        ),
        (c + e, "the overlap is ignored"),
        (c + (1 - o) * e, "the hidden part needs its cap: at most the backward pass"),
        (
            c + ring(n, m, b, 0) - min(o * ring(n, m, b, 0), BACKWARD * c),
            "the exchange has no latency term: check ring_seconds",
        ),
    ]
    efficiency = [
        (n * c / right, "that is the speed-up; efficiency divides it by N"),
        (right / c, "upside down: efficiency is one device's step over N devices' step"),
        (c / right / n, "weak scaling: the step of 1 over the step of N, not divided by N again"),
    ]
    return seconds, efficiency


def check_predict_step(predict_step) -> str:
    """Check ``predict_step(compute_s, devices, nbytes, bandwidth_bytes_per_s, latency_s,
    overlap=0.0) -> (step seconds, efficiency)``, weak scaling.

    Varies the device count (1: the compute alone, and an efficiency of 1), the overlap
    (the default, 0.25 to 1), a compute short enough that the backward pass caps what can
    hide (at overlaps of 1 and 0.75), the bytes, bandwidth and latency. The reference is the
    step written out here: ``compute + ring - min(overlap * ring, 2/3 compute)``, efficiency
    ``compute / step``.
    """
    for c, n, m, b, a, o in STEP_CASES:
        overlap = 0.0 if o is None else o
        what = f"compute {c * 1e3:g} ms, {n} device(s), {m / 1e6:g} MB at {b / 1e9:g} GB/s, " + (
            "overlap left at its default" if o is None else f"overlap {o:g}"
        )
        args = (c, n, m, b, a) if o is None else (c, n, m, b, a, o)
        got = _call(what, predict_step, *args)
        try:
            seconds, efficiency = got
        except (TypeError, ValueError):
            raise AssertionError(
                f"{what}: yours returns {got!r}, want (seconds, efficiency)"
            ) from None
        seconds = _number(what, seconds, "the step")
        efficiency = _number(what, efficiency, "the efficiency")
        want_s, want_e = step(c, n, m, b, a, overlap)
        by_s, by_e = _step_suspects(c, n, m, b, a, overlap)
        if not _same(seconds, want_s):
            hint = next((h for v, h in by_s if _same(seconds, v)), "")
            if n == 1:
                hint = "one device exchanges nothing: its step is the compute alone"
            raise AssertionError(
                f"{what}: step {seconds * 1e3:.4g} ms, want {want_s * 1e3:.4g} ms"
                + (f": {hint}" * bool(hint))
            )
        if not _same(efficiency, want_e):
            hint = next((h for v, h in by_e if _same(efficiency, v)), "")
            raise AssertionError(
                f"{what}: efficiency {efficiency:.4f}, want {want_e:.4f}"
                + (f": {hint}" * bool(hint))
            )
    return f"Check 2 passed: steps and efficiencies for {len(STEP_CASES)} cases"


# --- check 3: against a published row -------------------------------------------------------


def _rows():
    held = [
        r
        for r in published.rows()
        if r.setup in ("dgx1", "dgx1_b32") and r.algorithm == "ring" and not r.fit
    ]
    made = published.Row("made up", "dgx1", "resnet50", 4, 0.93, per_device_batch=32)
    made = replace(made, one_device_examples_per_s=195.0)
    # one GPU against itself: the prediction is exactly 1, and so is the published
    alone = replace(made, devices=1, efficiency=1.0)
    return held + [made, alone]


def _hardware():
    dgx1 = cards.HARDWARE["dgx1"]
    slow = replace(dgx1, intra=scaling.Link(200e-6, 10e9), name="DGX-1 with slower links")
    return [dgx1, slow, cards.HARDWARE["k80_gce"]]


def reference_comparison(row, hardware, overlap, band):
    """(predicted efficiency, published efficiency, within the band) for a row on one node."""
    card = cards.model_card(row.model)
    compute = row.per_device_batch / row.one_device_examples_per_s
    link = hardware.intra
    _, predicted = step(
        compute,
        row.devices,
        card.gradient_bytes,
        link.bandwidth_bytes_per_s,
        link.latency_s,
        overlap,
    )
    return predicted, row.efficiency, abs(predicted - row.efficiency) <= band


def _compare_suspects(row, hardware, overlap):
    card = cards.model_card(row.model)
    link = hardware.intra
    bw, lat = link.bandwidth_bytes_per_s, link.latency_s
    compute = row.per_device_batch / row.one_device_examples_per_s
    n = row.devices
    flops = row.per_device_batch * card.train_flops / hardware.device_flops_per_s
    host = hardware.link_to_host()
    return [
        (
            step(compute, n, card.params, bw, lat, overlap)[1],
            "the bytes are the parameter "
            "count; the gradients are gradient_bytes (4 bytes a parameter)",
        ),
        (
            step(flops, n, card.gradient_bytes, bw, lat, overlap)[1],
            "the compute comes from "
            "FLOPs and the card's device rate; the row measured the one-device rate: "
            "per_device_batch / one_device_examples_per_s",
        ),
        (
            step(1 / row.one_device_examples_per_s, n, card.gradient_bytes, bw, lat, overlap)[1],
            "the compute is one example's; a device takes per_device_batch of them",
        ),
        (
            step(
                compute, n, card.gradient_bytes, host.bandwidth_bytes_per_s, host.latency_s, overlap
            )[1],
            "the link is the host's; the ring runs over intra, inside the node",
        ),
        (
            step(compute, n, card.gradient_bytes, bw, lat, 0.0)[1],
            "the overlap asked for is not used",
        ),
        (n * step(compute, n, card.gradient_bytes, bw, lat, overlap)[1], "that is a speed-up"),
    ]


#: (row, hardware card, overlap, band): indices into _rows() and _hardware()
COMPARE_CASES = [
    (1, 0, 0.0, 0.05),  # VGG-16 on the DGX-1: inside
    (0, 0, 0.0, 0.05),  # AlexNet on the DGX-1: far outside
    (0, 2, 0.25, 0.02),
    (2, 1, 0.25, 0.04),  # inside in points, outside as a share of the published
    (3, 1, 0.5, 0.02),
    (2, 2, 0.5, 0.03),
    (1, 2, 0.75, 0.1),
    (3, 0, 1.0, 0.05),  # everything hidden: efficiency 1
    (0, 1, 0.5, 0.15),
    (1, 2, 0.0, 0.05),  # the prediction far below the published
    (4, 0, 0.5, 0.0),  # one GPU, no band: a gap of exactly the band (0) is within
]


def _within_rules(predicted, measured, band):
    """(what the answer's `within` would be, the mistake) for the usual misreadings."""
    gap = predicted - measured
    return [
        (
            abs(predicted / measured - 1) <= band,
            "the band is in points of efficiency, not a share of the published",
        ),
        (gap <= band, "the prediction is below the published; the band holds on both sides"),
        (
            abs(gap) < band,
            "'at most' the band: a gap equal to the band is within (<=, not <)",
        ),
    ]


def check_compare(compare_with_published) -> str:
    """Check ``compare_with_published(row, hardware, overlap, band) -> (predicted, published,
    within)``.

    Varies the row (three held-out rows of TensorFlow's DGX-1 tables and two made up: four
    models, 1, 4 and 8 GPUs, batches of 32 to 512), the hardware card (the DGX-1's, one with
    slower links, the K80 server's), the overlap and the band (2 to 15 points, and 0 on one
    GPU, where the gap is exactly 0: 'at most' the band is within), so that verdicts come out
    both ways. The reference is the hand computation of this module. The first case that
    goes wrong is reported; a misreading of the band is named only when it gives every
    verdict the answer returned.
    """
    rows, cards_ = _rows(), _hardware()
    answered, broke = [], None
    for i, j, overlap, band in COMPARE_CASES:
        row, hardware = rows[i], cards_[j]
        what = (
            f"{cards.DISPLAY[row.model]} on {row.devices} GPU{'s' * (row.devices != 1)} "
            f"(batch {row.per_device_batch}), {hardware.name}, overlap {overlap:g}, band {band:g}"
        )
        try:
            got = _call(what, compare_with_published, row, hardware, overlap, band)
            try:
                predicted, measured, within = got
            except (TypeError, ValueError):
                raise AssertionError(
                    f"{what}: yours returns {got!r}, want (predicted, published, within)"
                ) from None
            predicted = _number(what, predicted, "the prediction")
            measured = _number(what, measured, "the published efficiency")
            assert isinstance(within, (bool, np.bool_)), (
                f"{what}: within is {within!r}; say True or False"
            )
        except AssertionError as error:
            broke = error
            break
        want = reference_comparison(row, hardware, overlap, band)
        answered.append((what, row, hardware, overlap, band, predicted, measured, within, want))
    for what, row, hardware, overlap, band, predicted, measured, within, want in answered:
        want_p, want_m, want_in = want
        if not _same(measured, want_m):
            hint = ""
            if _same(measured, want_m * row.devices):
                hint = ": that is the published speed-up; compare efficiencies"
            raise AssertionError(
                f"{what}: published {measured:.4f}, want the row's efficiency {want_m:.4f}" + hint
            )
        if not _same(predicted, want_p):
            suspects = _compare_suspects(row, hardware, overlap)
            hint = next((h for v, h in suspects if _same(predicted, v)), "")
            raise AssertionError(
                f"{what}: predicted {predicted:.4f}, want {want_p:.4f}" + (f": {hint}" * bool(hint))
            )
        if bool(within) != want_in:
            # name a misreading only when it gives every `within` the answer returned
            fits = [
                h
                for k, (_, h) in enumerate(_within_rules(want_p, want_m, band))
                if all(bool(a[7]) == _within_rules(a[8][0], a[8][1], a[4])[k][0] for a in answered)
            ]
            raise AssertionError(
                f"{what}: yours says within={within!r}; the prediction is "
                f"{abs(want_p - want_m) * 100:.1f} points from the published, the band "
                f"{band * 100:g}" + (f": {fits[0]}" if len(fits) == 1 else "")
            )
    if broke is not None:
        raise broke
    return f"Check 3 passed: {len(COMPARE_CASES)} comparisons with published rows"
