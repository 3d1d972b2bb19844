"""dpkit.checking.agree: a result against its reference, with a float32 bar."""

import numpy as np
import pytest

from dpkit import checking

# --- checking.agree: a float32 bar relative to the magnitudes ---------------------------


def float64_matmul_pair():
    """A float32 product and its float64 reference: they differ by float32 rounding only."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 256)).astype(np.float32)
    w = rng.normal(size=(256, 10)).astype(np.float32)
    return x @ w, x.astype(np.float64) @ w.astype(np.float64)


def test_float32_rounding_agrees_and_the_bar_follows_the_magnitude():
    got, want = float64_matmul_pair()
    check = checking.agree(got, want, what="matmul vs float64")
    assert check and check.gap > 0  # not equal, but within rounding
    # The same relative error on values 1e6 times larger still agrees: the bar scales.
    assert checking.agree(got * 1e6, want * 1e6)
    # An absolute bar of 1e-5 would call this a failure on values of this size.
    assert checking.agree(got * 1e3, want * 1e3) and np.max(np.abs(got - want)) * 1e3 > 1e-5
    assert "matmul vs float64: agree" in str(check) and "float32 epsilons" in str(check)


@pytest.mark.parametrize(
    "wrong, why",
    [
        (lambda g: g * 0.75, "three of four towers' share (a plain mean with an empty tower)"),
        (lambda g: g * 4, "a sum over 4 towers instead of a mean"),
        (lambda g: g + 1e-3 * np.abs(g).max(), "an offset of 0.1% of the largest value"),
        (lambda g: np.where(np.arange(g.size).reshape(g.shape) == 7, np.nan, g), "one NaN"),
    ],
)
def test_a_wrong_result_differs_and_the_message_says_by_how_much(wrong, why):
    got, want = float64_matmul_pair()
    check = checking.agree(wrong(got), want, what=why)
    assert not check, why
    assert str(check).startswith(f"{why}: differ")


def test_a_list_is_judged_against_its_largest_magnitude():
    big, small = np.full(3, 1000.0), np.full(2, 1e-3)
    # A gap of 1e-6 in the small item is rounding noise of values up to 1000: it agrees ...
    assert checking.agree([big, small + 1e-6], [big, small])
    # ... but 1% of the largest value does not, and the message names the item.
    check = checking.agree([big, small + 10.0], [big, small])
    assert not check and check.item == 1 and "(item 1)" in str(check)


def test_ulps_and_scale_move_the_bar():
    got, want = float64_matmul_pair()
    assert not checking.agree(got, want, ulps=1e-3)  # a bar far below rounding
    near_zero = np.array([1e-9])
    check = checking.agree(near_zero, np.zeros(1))  # zero reference: bar 0
    assert not check and "differ (the bar is 0)" in str(check)
    assert checking.agree(near_zero, np.zeros(1), scale=1.0)  # terms of size 1 cancelled


def test_bad_comparisons_are_refused():
    with pytest.raises(ValueError, match="cannot compare 2 items with 1"):
        checking.agree([np.zeros(2), np.zeros(2)], [np.zeros(2)])
    with pytest.raises(ValueError, match=r"item 0 has shape \(2,\) on one side, \(3,\)"):
        checking.agree([np.zeros(2)], [np.zeros(3)])
    with pytest.raises(ValueError, match="ulps"):
        checking.agree(np.zeros(2), np.zeros(2), ulps=0)


def test_the_gap_is_numpys_largest_absolute_difference_over_every_item():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    a = [rng.normal(size=(3, 4)), rng.normal(size=5)]
    b = [a[0] + 0.25, a[1] - rng.uniform(0, 0.5, size=5)]
    expected = max(np.abs(a[0] - b[0]).max(), np.abs(a[1] - b[1]).max())
    assert checking.agree(a, [tf.constant(t) for t in b]).gap == pytest.approx(expected)
