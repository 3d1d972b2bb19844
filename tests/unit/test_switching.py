"""dpkit_checks.switching: dpkit's own functions switched off while a check runs, and back
after (moved from dpkit.checking with the rest of the course's checker)."""

import numpy as np
import pytest

from dpkit import towers
from dpkit_checks import switching


def test_a_switched_off_function_fails_the_check_and_comes_back():
    original = towers.split_batch
    refusal = r"calls dpkit's towers.split_batch: .*yourself"
    with (
        switching.switched_off(towers, "split_batch", "make_parallel"),
        pytest.raises(AssertionError, match=refusal),
    ):
        towers.split_batch([1, 2], [1, 2], 2)
    assert towers.split_batch is original


def test_it_comes_back_when_the_block_raises():
    original = towers.make_parallel
    with pytest.raises(KeyError), switching.switched_off(towers, "make_parallel"):
        raise KeyError("learner's error")
    assert towers.make_parallel is original


def test_a_name_the_module_lacks_is_a_mistake_in_the_check():
    with (
        pytest.raises(ValueError, match="dpkit.towers has no split_evnly"),
        switching.switched_off(towers, "split_evnly"),
    ):
        pass


def test_a_re_exported_name_is_switched_off_where_it_lives_too():
    from dpkit import summaries
    from dpkit.summaries import logs

    assert summaries.read is logs.read
    with switching.switched_off(summaries, "read"):
        for module in (summaries, logs):
            with pytest.raises(AssertionError, match="the exercise is to write it yourself"):
                module.read("no-such-run")
    assert summaries.read is logs.read and logs.read.__name__ == "read"


def test_an_alias_made_before_the_check_refuses_too():
    """A learner's `from dpkit.towers import make_parallel as mp` must not get round it."""
    from dpkit import summaries
    from dpkit.summaries.logs import read as my_read
    from dpkit.towers import make_parallel as mp

    with switching.switched_off(towers, "make_parallel"), switching.switched_off(summaries, "read"):
        with pytest.raises(AssertionError, match="towers.make_parallel: .*yourself"):
            mp(lambda x: x, ["/cpu:0"], x=np.zeros((2, 1)))
        with pytest.raises(AssertionError, match="summaries.read: .*yourself"):
            my_read("no-such-run")
    assert mp is towers.make_parallel and mp.__code__.co_name == "make_parallel"
    assert "refused" not in my_read.__qualname__


def test_what_cannot_be_switched_off_is_named():
    def outer():
        y = 1

        def inner():
            return y

        return inner

    import types as _types

    fake = _types.ModuleType("dpkit.fake")
    fake.inner = outer()
    with (
        pytest.raises(ValueError, match="cannot switch off fake.inner"),
        switching.switched_off(fake, "inner"),
    ):
        pass
