"""dpkit.memory against NumPy's byte counts and hand counts of the layers."""

from __future__ import annotations

import numpy as np
import pytest


def small_model(hidden=5):
    import keras

    return keras.Sequential(
        [
            keras.Input((3, 4)),
            keras.layers.Flatten(),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(2),
        ]
    )


def test_variable_bytes_is_what_numpy_holds():
    import tensorflow as tf

    from dpkit import memory

    values = [tf.Variable(np.ones((3, 5), np.float32)), tf.zeros([7], tf.bfloat16), None]
    assert memory.variable_bytes(values) == 3 * 5 * 4 + 7 * 2
    model = small_model()
    assert memory.variable_bytes(model.trainable_variables) == sum(
        w.nbytes for w in model.get_weights()
    )


def test_adam_holds_two_slots_per_parameter_and_sgd_none():
    import keras

    from dpkit import memory

    model = small_model()
    params = sum(w.nbytes for w in model.get_weights())
    adam = keras.optimizers.Adam()
    adam.build(model.trainable_variables)
    assert memory.slot_bytes(adam) == 2 * params
    sgd = keras.optimizers.SGD()
    sgd.build(model.trainable_variables)
    assert memory.slot_bytes(sgd) == 0
    with pytest.raises(ValueError, match="optimizer.build"):
        memory.slot_bytes(keras.optimizers.Adam())


def test_activation_bytes_counts_every_layer_output_by_hand():
    import keras

    from dpkit import memory

    model = small_model(hidden=5)
    x = np.zeros((6, 3, 4), np.float32)
    assert memory.activation_bytes(model, x) == 4 * 6 * (12 + 5 + 2)
    adam = keras.optimizers.Adam()
    adam.build(model.trainable_variables)
    replica = memory.replica(model, adam, x)
    params = sum(w.nbytes for w in model.get_weights())
    assert (replica.parameters, replica.gradients, replica.slots) == (params, params, 2 * params)
    assert replica.total == 4 * params + 4 * 6 * 19


def test_activation_bytes_counts_a_layer_that_returns_its_input_again():
    import keras

    from dpkit import memory

    # Dropout at rate 0 returns its input tensor: the count is a proxy that counts it twice
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(5), keras.layers.Dropout(0.0), keras.layers.Dense(2)]
    )
    x = np.zeros((6, 4), np.float32)
    assert memory.activation_bytes(model, x) == 4 * 6 * (5 + 5 + 2)


def test_bytes_per_parameter_and_the_largest_model_by_hand():
    from dpkit import memory

    assert memory.bytes_per_parameter() == 4 + 4 + 2 * 4
    assert memory.bytes_per_parameter(weights=2, gradients=2, slots=0) == 4
    assert memory.largest_model(16e9, 16) == 10**9
    with pytest.raises(ValueError, match="device_bytes"):
        memory.largest_model(0, 16)
    with pytest.raises(ValueError, match="slots"):
        memory.bytes_per_parameter(slots=-1)
