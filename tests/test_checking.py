"""dpkit.checking: dpkit's own functions switched off while a check runs, and back after."""

import pytest

from dpkit import checking, towers


def test_a_switched_off_function_fails_the_check_and_comes_back():
    original = towers.split_batch
    refusal = r"calls dpkit's towers.split_batch: .*yourself"
    with (
        checking.switched_off(towers, "split_batch", "make_parallel"),
        pytest.raises(AssertionError, match=refusal),
    ):
        towers.split_batch([1, 2], [1, 2], 2)
    assert towers.split_batch is original


def test_it_comes_back_when_the_block_raises():
    original = towers.make_parallel
    with pytest.raises(KeyError), checking.switched_off(towers, "make_parallel"):
        raise KeyError("learner's error")
    assert towers.make_parallel is original


def test_a_name_the_module_lacks_is_a_mistake_in_the_check():
    with (
        pytest.raises(ValueError, match="dpkit.towers has no split_evnly"),
        checking.switched_off(towers, "split_evnly"),
    ):
        pass


def test_a_re_exported_name_is_switched_off_where_it_lives_too():
    from dpkit import bench, report

    assert bench.Report is report.Report
    with checking.switched_off(bench, "Report"):
        for module in (bench, report):
            with pytest.raises(AssertionError, match="the exercise is to write it yourself"):
                module.Report([])
    assert bench.Report is report.Report and report.Report.__name__ == "Report"
