"""dpkit.overlap: packs against TensorFlow's own group_by_size, fractions against hand sums."""

from __future__ import annotations

import json

import pytest

from dpkit import overlap

# tensors of every kind the packing sees: big and small, float32 and float16, a scalar
SHAPES = [((256, 64), "float32"), ((64,), "float32"), ((1024,), "float16"), ((), "float32")]
SHAPES += [((128, 128), "float32"), ((10,), "float32"), ((32, 32), "float16")]


def tensors():
    import tensorflow as tf

    return [tf.zeros(shape, dtype) for shape, dtype in SHAPES]


def tf_packs(values, bytes_per_pack):
    """TensorFlow's packs of ``values``, as positions in ``values``."""
    from tensorflow.python.distribute import cross_device_utils

    position = {id(v): i for i, v in enumerate(values)}
    return [
        [position[id(v)] for v in pack]
        for pack in cross_device_utils.group_by_size(values, bytes_per_pack)
    ]


def test_tensor_bytes_by_hand():
    by_hand = [256 * 64 * 4, 64 * 4, 1024 * 2, 4, 128 * 128 * 4, 10 * 4, 32 * 32 * 2]
    assert overlap.tensor_bytes(tensors()) == by_hand


# pack sizes around the tensors' bytes: the boundary (a pack of exactly bytes_per_pack stays
# open), one byte, more than everything, and TensorFlow's default 0
@pytest.mark.parametrize("bytes_per_pack", [0, 1, 256, 2048, 65536, 65537, 70000, 10**9])
def test_packs_are_tensorflows(bytes_per_pack):
    values = tensors()
    sizes = overlap.tensor_bytes(values)
    assert overlap.group_by_size(sizes, bytes_per_pack) == tf_packs(values, bytes_per_pack)
    # the collective all-reduce packs the reversed list
    reversed_values = values[::-1]
    last = len(values) - 1
    expected = [[last - i for i in p] for p in tf_packs(reversed_values, bytes_per_pack)]
    assert overlap.all_reduce_packs(sizes, bytes_per_pack) == expected


def test_packs_by_hand():
    # 4 + 4 = 8 is not more than 8: the pack stays open; 12 > 8 closes it
    assert overlap.group_by_size([4, 4, 4, 4, 1], 8) == [[0, 1, 2], [3, 4]]
    assert overlap.all_reduce_packs([4, 4, 4, 4, 1], 8) == [[4, 3, 2], [1, 0]]
    assert overlap.group_by_size([5, 5], 0) == [[0, 1]]


def test_deep_mlp_gradients():
    model = overlap.deep_mlp(width=8, layers=3, num_classes=4)
    sizes = overlap.tensor_bytes(model.trainable_variables)
    assert sizes == [8 * 8 * 4, 8 * 4] * 3 + [8 * 4 * 4, 4 * 4]


def test_hidden_fraction_by_hand():
    # compute 1.0 s, exchange 0.5 s, step 1.2 s: 0.3 s of the 0.5 s hid
    assert overlap.hidden_fraction(1.2, 1.0, 0.5) == pytest.approx(0.6, rel=1e-12)
    assert overlap.hidden_fraction(1.5, 1.0, 0.5) == pytest.approx(0.0, abs=1e-12)


def test_measured_summaries_by_hand(tmp_path):
    seconds = {
        "compute": [1.0, 1.0, 1.0],
        "step 0": [1.5, 1.6, 1.4],
        "exchange 0": [0.5, 0.5, 0.5],
        "step 8": [1.2, 1.3, 1.5],
        "exchange 8": [0.4, 0.5, 0.5],
    }
    path = tmp_path / "result.json"
    data = {"seconds": seconds, "bytes_per_pack": [0, 8], "packs": {"0": 1, "8": 2}}
    path.write_text(json.dumps(data | {"collective_ops": {}, "config": {}}))
    m = overlap.load(path)
    saved = [0.3, 0.3, -0.1]
    assert m.saved(8) == pytest.approx((0.3, -0.1, 0.3), rel=1e-9)
    assert m.exposed(8) == pytest.approx((0.3, 0.2, 0.5), rel=1e-9)
    hidden = [(1.0 + 0.4 - 1.2) / 0.4, (1.0 + 0.5 - 1.3) / 0.5, (1.0 + 0.5 - 1.5) / 0.5]
    assert m.overlap(8) == pytest.approx((sorted(hidden)[1], min(hidden), max(hidden)), rel=1e-9)
    assert not m.clear(8)  # one round of the three cost time: within the spread
    assert min(saved) < 0
    m.seconds["step 8"][2] = 1.35
    assert m.clear(8)
    assert "2 packs" in m.table()


def test_bad_input_is_named():
    import tensorflow as tf

    with pytest.raises(ValueError, match="bytes_per_pack"):
        overlap.group_by_size([4], -1)
    with pytest.raises(ValueError, match="unknown shape"):
        overlap.tensor_bytes([tf.TensorSpec([None, 3])])
    with pytest.raises(ValueError, match="exchange_s"):
        overlap.hidden_fraction(1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="overlap_packs.py"):
        overlap.load("/nonexistent/overlap.json")
