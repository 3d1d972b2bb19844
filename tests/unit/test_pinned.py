"""dpkit.pinned in this process: bad arguments refused with the problem named, the contenders'
names, and a comparison's rates, medians and speedups against arithmetic by hand.
A real run of pinned workers: tests/process/test_pinned.py."""

import pytest

from dpkit import pinned


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(model="resnet"), "unknown model 'resnet'"),
        (dict(workers=1), "workers must be a whole number >= 2"),
        (dict(workers=10_000), "a pinned worker needs a core of its own"),
        (dict(workers=2, global_batch=255), "does not split evenly over 2 workers"),
        (dict(rounds=0), "rounds must be a whole number >= 1"),
        (dict(window_steps=1.5), "window_steps must be a whole number"),
        (dict(warmup_steps=0), "warmup_steps must be a whole number >= 1"),
        (dict(timeout=-1), "timeout must be a positive number of seconds"),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, message):
    if kwargs.get("workers") == 2 and len(pinned.usable_cores()) < 2:
        pytest.skip("needs 2 usable cores to reach the batch check")
    with pytest.raises(ValueError, match=message):
        pinned.compare(**kwargs)


def test_contender_names_say_what_runs():
    assert pinned.contender_names(4) == [
        "1 process, 1 thread",
        "1 process, 4 threads",
        "4 pinned workers",
    ]


def test_comparison_arithmetic_by_hand():
    c = pinned.Comparison("lenet5", 100, 2, 2)
    c.seconds = {"1 process, 1 thread": [2.0, 4.0, 2.0], "2 pinned workers": [1.0, 1.0, 2.0]}
    assert c.rates("2 pinned workers") == [200.0, 200.0, 100.0]
    assert c.median("1 process, 1 thread") == 100.0
    assert c.interval("2 pinned workers") == (100.0, 200.0)
    assert c.speedups("2 pinned workers") == [2.0, 4.0, 1.0]  # paired per round
    assert c.speedup("2 pinned workers") == 2.0
