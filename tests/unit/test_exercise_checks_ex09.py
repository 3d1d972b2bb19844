"""The checks of exercise 09 pass a right answer and fail wrong ones, saying why; their hand
references agree with dpkit.scaling, computed another way."""

from __future__ import annotations

import pytest

from dpkit import cards, published, scaling
from dpkit_checks import ex09


def ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s):
    steps = devices - 1
    return 2 * steps * (nbytes / devices) / bandwidth_bytes_per_s + 2 * steps * latency_s


def predict_step(compute_s, devices, nbytes, bandwidth_bytes_per_s, latency_s, overlap=0.0):
    exchange = ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s)
    exposed = max(exchange - overlap * exchange, exchange - 2 / 3 * compute_s)
    return compute_s + exposed, compute_s / (compute_s + exposed)


def compare_with_published(row, hardware, overlap, band):
    link = hardware.intra
    compute = row.per_device_batch / row.one_device_examples_per_s
    nbytes = cards.model_card(row.model).gradient_bytes
    args = (link.bandwidth_bytes_per_s, link.latency_s, overlap)
    predicted = predict_step(compute, row.devices, nbytes, *args)[1]
    return predicted, row.efficiency, abs(predicted - row.efficiency) <= band


def test_right_answers_pass():
    assert "Check 1 passed" in ex09.check_ring_seconds(ring_seconds)
    assert "Check 2 passed" in ex09.check_predict_step(predict_step)
    assert "Check 3 passed" in ex09.check_compare(compare_with_published)


@pytest.mark.parametrize("n, overlap", [(1, 0.0), (2, 0.5), (8, 0.0), (8, 1.0), (3, 0.25)])
def test_the_hand_reference_agrees_with_dpkit_scaling(n, overlap):
    """The check's formulas against dpkit.scaling.step on a one-node card (an independent
    implementation: Link objects, Exchange parts, its own cap)."""
    hw = cards.HARDWARE["dgx1"]
    card = cards.model_card("vgg16")
    s = scaling.step(card, hw, n, 64, overlap=overlap, one_device_examples_per_s=154)
    link = hw.intra
    args = (card.gradient_bytes, link.bandwidth_bytes_per_s, link.latency_s)
    assert ex09.ring(n, *args) == pytest.approx(s.exchange.seconds, rel=1e-12)
    assert ex09.step(64 / 154, n, *args, overlap)[0] == pytest.approx(s.seconds, rel=1e-12)


def test_the_held_out_comparison_agrees_with_dpkit_published():
    """published.predict_row with nothing fitted is the same prediction for a ring row."""
    row = next(r for r in ex09._rows() if r.model == "vgg16" and r.setup == "dgx1")
    hw = cards.HARDWARE["dgx1"]
    want = published.predict_row(row, published.SETUPS["dgx1"], {"overlap": 0.5})
    assert ex09.reference_comparison(row, hw, 0.5, 0.05)[0] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda n, m, b, a: 2 * m / b + 2 * (n - 1) * a, r"one device exchanges nothing"),
        (lambda n, m, b, a: 2 * (n - 1) / n * m / b, r"the latency term is missing"),
        (lambda n, m, b, a: 2 * (n - 1) / n * m / b + (n - 1) * a, r"\(N-1\) latencies"),
        (lambda n, m, b, a: scaling.ring_bytes(n, m) / b, r"calls dpkit's scaling\.ring_bytes"),
    ],
)
def test_a_wrong_ring_fails_saying_why(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex09.check_ring_seconds(answer)


def _step(hidden, efficiency=lambda c, s, n: c / s):
    def answer(compute_s, devices, nbytes, bandwidth, latency, overlap=0.0):
        e = ring_seconds(devices, nbytes, bandwidth, latency)
        seconds = compute_s + e - hidden(overlap, e, compute_s)
        return seconds, efficiency(compute_s, seconds, devices)

    return answer


@pytest.mark.parametrize(
    "answer, message",
    [
        (_step(lambda o, e, c: o * e), r"compute 20 ms.*nothing caps the hidden part"),
        (_step(lambda o, e, c: min(o * e, c)), r"the cap is the whole compute"),
        (
            _step(lambda o, e, c: min(o * e, 2 * c / 3), lambda c, s, n: n * c / s),
            r"8 device\(s\).*that is the speed-up",
        ),
        (_step(lambda o, e, c: 0.0), r"overlap 0\.5: step .*: the overlap is ignored"),
        (  # right wherever the overlap is 1 or the cap does not bind
            _step(lambda o, e, c: o * min(e, 2 * c / 3)),
            r"compute 12 ms.*overlap 0\.75: .*the overlap multiplies what is left after the cap",
        ),
    ],
)
def test_a_wrong_step_fails_saying_why(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex09.check_predict_step(answer)


def _compare(**swap):
    def answer(row, hardware, overlap, band):
        p, m, within = compare_with_published(row, hardware, overlap, band)
        if "published" in swap:
            m = swap["published"](row)
        if "within" in swap:
            within = swap["within"](p, row.efficiency, band)
        if "predicted" in swap:
            p = swap["predicted"](row, hardware, overlap)
        return p, m, within

    return answer


def _by_params(row, hardware, overlap):
    link, card = hardware.intra, cards.model_card(row.model)
    compute = row.per_device_batch / row.one_device_examples_per_s
    args = (link.bandwidth_bytes_per_s, link.latency_s, overlap)
    return predict_step(compute, row.devices, card.params, *args)[1]


@pytest.mark.parametrize(
    "answer, message",
    [
        (_compare(predicted=_by_params), r"the bytes are the parameter count"),
        (_compare(published=lambda r: r.efficiency * r.devices), r"the published speed-up"),
        (_compare(within=lambda p, m, b: abs(p / m - 1) <= b), r"not a share of the published"),
        (_compare(within=lambda p, m, b: p - m <= b), r"the band holds on both sides"),
        (_compare(within=lambda p, m, b: "yes"), r"within is 'yes'; say True or False"),
        (
            _compare(within=lambda p, m, b: abs(p - m) < b),
            r"ResNet-50 on 1 GPU \(batch 32\), .*band 0: yours says within=False.*<=, not <",
        ),
        (
            # right where it is right, wrong once by rounding: that once matches the band read
            # as a share of the published by chance, and no misreading is named
            _compare(within=lambda p, m, b: abs(round(p, 2) - round(m, 2)) <= b),
            r"band 0\.04: yours says within=False; the prediction is 3\.7 points from the "
            r"published, the band 4$",
        ),
    ],
)
def test_a_wrong_comparison_fails_saying_why(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex09.check_compare(answer)


def test_the_checks_own_references_are_switched_off_while_the_answer_runs():
    def borrowed(compute_s, devices, nbytes, bandwidth, latency, overlap=0.0):
        return ex09.step(compute_s, devices, nbytes, bandwidth, latency, overlap)

    with pytest.raises(AssertionError, match=r"calls dpkit's ex09\.step"):
        ex09.check_predict_step(borrowed)
    # and they work again afterwards
    assert ex09.step(1.0, 1, 0.0, 1.0, 0.0) == (1.0, 1.0)
