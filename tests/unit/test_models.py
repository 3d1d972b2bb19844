"""dpkit.models: shapes, parameter counts and FLOPs against independent references."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from dpkit import models


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_produce_logits_of_the_right_shape(name):
    model = models.build(name)
    x = np.zeros((3, *model.input_shape[1:]), np.float32)
    assert model(x).shape == (3, 10)


def test_input_shapes_are_what_each_model_is_built_for():
    assert sorted(models.INPUT_SHAPES) == sorted(models.MODELS)
    for name, shape in models.INPUT_SHAPES.items():
        assert tuple(models.build(name).input_shape[1:]) == shape, name


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_param_count_agrees_with_keras(name):
    model = models.build(name)
    assert models.count_params(model) == model.count_params()  # Keras counts its own way


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_flops_estimate_agrees_with_tensorflow_profiler(name):
    model = models.build(name)
    forward = tf.autograph.experimental.do_not_convert(lambda x: model(x, training=False))
    spec = tf.TensorSpec((1, *model.input_shape[1:]), tf.float32)
    graph = convert_variables_to_constants_v2(
        tf.function(forward).get_concrete_function(spec)
    ).graph
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profiled = tf.compat.v1.profiler.profile(graph=graph, options=options).total_float_ops
    estimate = models.flops_per_example(model)
    assert abs(estimate - profiled) / profiled < 0.01  # ours leaves out pooling/ReLU/LRN
    assert models.flops_per_example(model, training=True) == 3 * estimate


def test_lenet5_accepts_cifar_images():
    model = models.lenet5((28, 28, 3))
    assert model(np.zeros((1, 28, 28, 3), np.float32)).shape == (1, 10)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: models.build("resnet"), "unknown model 'resnet'.*lenet5"),
        (lambda: models.lenet5((28, 28)), "input_shape must be 3 positive ints"),
        (lambda: models.lenet5((2, 2, 1)), "at least 4x4"),
        (lambda: models.lenet5(num_classes=1), "num_classes must be a whole number >= 2"),
        (lambda: models.cifar10_cnn((24, 24, 0)), "input_shape"),
        (lambda: models.mnist_mlp(dropout=1.0), "dropout"),
        (lambda: models.mnist_mlp(hidden_units=0), "hidden_units"),
    ],
)
def test_bad_model_arguments_are_named(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_describe_lists_every_layer_and_the_total():
    model = models.lenet5()
    table = models.describe(model)
    for layer in model.layers:
        assert layer.name in table
    assert f"{model.count_params():,}" in table
