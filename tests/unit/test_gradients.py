"""dpkit.gradients: averaging forms, sparse and missing gradients, weights, errors; all-reduce."""

import numpy as np
import pytest
import tensorflow as tf

from dpkit import checking, gradients

RNG = np.random.default_rng(0)


def _dense_towers(num_towers=3, shapes=((4, 3), (3,))):
    return [
        [tf.constant(RNG.normal(size=s), tf.float32) for s in shapes] for _ in range(num_towers)
    ]


def test_plain_lists_average_to_the_numpy_mean():
    towers = _dense_towers()
    averaged = gradients.average_gradients(towers)
    for k, got in enumerate(averaged):
        expected = np.mean([t[k].numpy() for t in towers], axis=0)
        check = checking.agree(got, expected, what="average vs NumPy mean")
        assert check, check


def test_pairs_keep_their_variables():
    variables = [tf.Variable(tf.zeros((4, 3))), tf.Variable(tf.zeros(3))]
    towers = [list(zip(grads, variables)) for grads in _dense_towers()]
    averaged = gradients.average_gradients(towers)
    assert [v for _, v in averaged] == variables
    expected = np.mean([t[0][0].numpy() for t in towers], axis=0)
    check = checking.agree(averaged[0][0], expected, what="average vs NumPy mean")
    assert check, check


def test_teaching_versions_agree_with_numpy():
    towers = _dense_towers(4)
    expected = [np.mean([t[k].numpy() for t in towers], axis=0) for k in range(2)]
    teaching = {
        "expand_dims + concat + mean": gradients.average_concat_mean,
        "stack + mean": gradients.average_stack_mean,
        "add_n / N": gradients.average_add_n,
    }
    for name, average in teaching.items():
        for got, want in zip(average(towers), expected):
            check = checking.agree(got, want, what=name)
            assert check, check


def test_weighted_mean_matches_numpy_average():
    towers = _dense_towers(3)
    sizes = [3, 3, 2]
    averaged = gradients.average_gradients(towers, weights=sizes)
    expected = np.average([t[0].numpy() for t in towers], axis=0, weights=sizes)
    check = checking.agree(averaged[0], expected, what="weighted mean vs np.average")
    assert check, check


def _embedding_grads(ids_per_tower, vocab=50, dim=4):
    table = tf.Variable(RNG.normal(size=(vocab, dim)).astype(np.float32))
    grads = []
    for ids in ids_per_tower:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, ids) ** 2)
        grads.append([tape.gradient(loss, table)])
    return table, grads


def test_sparse_gradients_stay_sparse_and_sum_correctly():
    table, towers = _embedding_grads([[1, 2, 2], [2, 7]])
    assert all(isinstance(t[0], tf.IndexedSlices) for t in towers)
    (averaged,) = gradients.average_gradients(towers)
    assert isinstance(averaged, tf.IndexedSlices)  # not densified
    dense_mean = np.mean([tf.convert_to_tensor(t[0]).numpy() for t in towers], axis=0)
    check = checking.agree(tf.convert_to_tensor(averaged), dense_mean, what="sparse vs dense")
    assert check, check


def test_sparse_average_applies_like_the_dense_one():
    table, towers = _embedding_grads([[0, 3], [3, 9]])
    start = table.numpy()
    (averaged,) = gradients.average_gradients(towers)
    tf.keras.optimizers.SGD(0.5).apply_gradients([(averaged, table)])
    dense_mean = np.mean([tf.convert_to_tensor(t[0]).numpy() for t in towers], axis=0)
    check = checking.agree(table, start - 0.5 * dense_mean, what="sparse step vs dense step")
    assert check, check


def test_none_in_every_tower_stays_none():
    towers = [[g[0], None] for g in _dense_towers(2)]
    averaged = gradients.average_gradients(towers)
    assert averaged[1] is None and averaged[0] is not None


@pytest.mark.parametrize(
    "towers, words",
    [
        ([], "at least one tower"),
        ([[tf.ones(2)], [tf.ones(2), tf.ones(2)]], "different numbers of gradients"),
        ([[tf.ones(2)], [None]], r"None in tower\(s\) \[1\]"),
        ([[tf.ones(2)], [tf.ones(3)]], "different shapes"),
    ],
)
def test_malformed_towers_are_named(towers, words):
    with pytest.raises(ValueError, match=words):
        gradients.average_gradients(towers)


def test_towers_with_different_variables_are_refused():
    a, b = tf.Variable(tf.zeros(2), name="a"), tf.Variable(tf.zeros(2), name="b")
    with pytest.raises(ValueError, match="towers must share their variables"):
        gradients.average_gradients([[(tf.ones(2), a)], [(tf.ones(2), b)]])


@pytest.mark.parametrize(
    "weights, words",
    [
        ([1, 2], "got 2 weights for 3 towers"),
        ([1, -1, 1], "non-negative"),
        ([0, 0, 0], "positive sum"),
    ],
)
def test_bad_weights_are_named(weights, words):
    with pytest.raises(ValueError, match=words):
        gradients.average_gradients(_dense_towers(3), weights=weights)


def test_ring_all_reduce_on_one_device_is_the_identity():
    t = tf.constant(RNG.normal(size=(3, 2)), tf.float32)
    (out,) = gradients.ring_all_reduce([t], ["/device:CPU:0"])
    np.testing.assert_array_equal(out.numpy(), t.numpy())


def test_ring_all_reduce_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one tensor per device"):
        gradients.ring_all_reduce([tf.ones(2)], ["/device:CPU:0", "/device:CPU:1"])
    with pytest.raises(ValueError, match="one shape"):
        gradients.ring_all_reduce([tf.ones(2), tf.ones(3)], ["/device:CPU:0"] * 2)


def test_bandwidth_model():
    mb = 8e6
    # One device: device 0's link carries 2(N-1) full messages; ring: 2(N-1) steps of 1/N each.
    assert gradients.all_reduce_seconds("one_device", 4, mb, 1e9) == pytest.approx(2 * 3 * 8e-3)
    assert gradients.all_reduce_seconds("ring", 4, mb, 1e9) == pytest.approx(2 * 3 / 4 * 8e-3)
    ring = [gradients.all_reduce_seconds("ring", n, mb, 1e9) for n in (2, 8, 64)]
    assert ring == sorted(ring) and ring[-1] < 2 * mb / 1e9  # bounded by twice one message
    assert gradients.all_reduce_seconds("ring", 1, mb, 1e9) == 0.0
    with pytest.raises(ValueError, match="'one_device' or 'ring'"):
        gradients.all_reduce_seconds("tree", 4, mb, 1e9)


def test_deduplicate_sums_repeated_rows_and_gives_adam_the_dense_step():
    import keras

    rng = np.random.default_rng(3)
    values = rng.normal(size=(6, 4)).astype(np.float32)
    indices = np.array([4, 1, 4, 7, 1, 4])
    sliced = tf.IndexedSlices(tf.constant(values), tf.constant(indices), tf.constant([9, 4]))
    once = gradients.deduplicate(sliced)
    expected = np.zeros((9, 4), np.float32)
    np.add.at(expected, indices, values)  # NumPy's own sum over repeated rows
    assert sorted(once.indices.numpy()) == [1, 4, 7]
    assert checking.agree(tf.convert_to_tensor(once), expected)
    start = rng.normal(size=(9, 4)).astype(np.float32)
    steps = []
    for gradient in (sliced, once, tf.constant(expected)):
        table = keras.Variable(start)
        keras.optimizers.Adam(0.001).apply_gradients([(gradient, table)])
        steps.append(table.numpy() - start)
    # repeated rows give Adam another step (each squared alone); deduplicated, the dense one
    assert not checking.agree(steps[0], steps[2], scale=0.001)
    assert checking.agree(steps[1], steps[2], scale=0.001)
    dense = tf.ones([2, 2])
    assert gradients.deduplicate(dense) is dense and gradients.deduplicate(None) is None
