"""dpkit.params: each rule against values chosen by hand, and check's message."""

import pytest

from dpkit import params


@pytest.mark.parametrize(
    "rule, good, bad",
    [
        (params.whole(1, 8), [1, 4, 8], [0, 9, 2.0, True, "4", None]),
        (params.whole(4, multiple_of=4), [4, 8, 64], [0, 2, 6, 10, 4.0]),
        (params.whole(0), [0, 7], [-1, 1.5]),
        # a bad minimum or divisor (another parameter's bad value) is reported by its own rule
        (params.whole(0, multiple_of=0), [0, 5], [-1]),
        (params.whole("4", multiple_of="4"), [5], [5.0]),
        (params.positive(), [1e-3, 2, 0.5], [0, -1, float("nan"), float("inf"), "1", False]),
        (params.positive(maximum=1), [1, 0.3], [1.5]),
        (params.fraction(), [0.5, 0.99], [0, 1, 1.2, -0.1]),
        (params.one_of("lenet5", "mlp"), ["mlp"], ["MLP", "cnn", 1]),
        (params.boolean(), [True, False], [1, 0, "True", None]),
        (
            params.whole_list(params.whole(1, 8)),
            [[1], [1, 2, 4], (2, 3)],
            [[], [1, 1], [0, 2], 4, "12"],
        ),
        (params.whole_list(params.whole(1, 8), min_length=2), [[1, 4]], [[4]]),
    ],
)
def test_rules_accept_good_values_and_describe_bad_ones(rule, good, bad):
    for value in good:
        assert rule(value) is None, value
    for value in bad:
        message = rule(value)
        assert isinstance(message, str) and message, value


def test_messages_name_the_allowed_values():
    assert params.whole(1, 8)(0) == "a whole number from 1 to 8"
    assert params.whole(4, multiple_of=4)(6) == "a whole number >= 4 that divides by 4"
    assert params.one_of("a", "b")("c") == "one of 'a', 'b'"
    assert "each a whole number from 1 to 8" in params.whole_list(params.whole(1, 8))([9])


def test_check_reports_every_bad_parameter_at_once():
    namespace = {"NUM_DEVICES": 0, "LEARNING_RATE": 0.1, "MODEL": "cnn"}
    with pytest.raises(ValueError) as raised:
        params.check(
            namespace,
            NUM_DEVICES=params.whole(1, 8),
            LEARNING_RATE=params.positive(),
            MODEL=params.one_of("lenet5", "mlp"),
            SEED=params.whole(0),
        )
    text = str(raised.value)
    assert "NUM_DEVICES = 0: it must be a whole number from 1 to 8" in text
    assert "MODEL = 'cnn': it must be one of 'lenet5', 'mlp'" in text
    assert "SEED is not set" in text
    assert "LEARNING_RATE" not in text


def test_check_passes_good_parameters():
    assert params.check({"N": 2}, N=params.whole(1, 8)) is None
