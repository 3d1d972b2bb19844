"""The sources' three models, written fresh in Keras 3, with size and cost estimates.

Introduced in lesson 01. Every model returns logits (no softmax), so pair it
with ``from_logits=True`` losses.

* :func:`lenet5`: two 5x5 convolutions (32 and 64 filters) with 2x2 max-pooling,
  a 512-unit dense layer and the output layer; the sources' LeNet-5 for 28x28 input.
* :func:`cifar10_cnn`: the CIFAR-10 network of TensorFlow's classic multi-GPU
  tutorial: two 5x5x64 convolutions with 3x3/2 pooling and local response
  normalisation, then 384- and 192-unit dense layers; 24x24x3 crops.
* :func:`mnist_mlp`: 784 -> 500 -> 10 with dropout, the TensorBoard chapter's network.

:func:`flops_per_example` estimates the arithmetic one example costs; lesson
04 divides measured throughput by it to get model FLOPs utilisation (MFU).
"""

from __future__ import annotations

import functools
import math

from dpkit.plumbing import checks

#: Rule of thumb: the backward pass (gradients for inputs and weights) costs about twice the
#: forward pass.
TRAINING_FLOPS_FACTOR = 3


@functools.cache
def _lrn_class():
    import keras  # here: scaling and cards (lesson 09) import models without TF
    import tensorflow as tf

    class LocalResponseNorm(keras.layers.Layer):
        """Local response normalisation across channels (``tf.nn.local_response_normalization``)."""

        def __init__(self, depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, **kwargs):
            super().__init__(**kwargs)
            self.depth_radius, self.bias, self.alpha, self.beta = depth_radius, bias, alpha, beta

        def call(self, x):
            return tf.nn.local_response_normalization(
                x, self.depth_radius, self.bias, self.alpha, self.beta
            )

        def get_config(self):
            names = ("depth_radius", "bias", "alpha", "beta")
            return {**super().get_config(), **{name: getattr(self, name) for name in names}}

    return LocalResponseNorm


def lenet5(input_shape=(28, 28, 1), num_classes: int = 10):
    """LeNet-5 as the sources use it (28x28 input; at least 4x4 for its two poolings), an
    uncompiled ``keras.Sequential`` producing logits."""
    import keras  # here: scaling and cards (lesson 09) import models without TF
    from keras import layers

    shape = checks.shape(input_shape, "input_shape", 3, "(28, 28, 1)")
    if min(shape[:2]) < 4:
        raise ValueError(f"LeNet-5 needs images of at least 4x4 pixels, got {shape[:2]}.")
    stack = [
        keras.Input(shape),
        layers.Conv2D(32, 5, padding="same", activation="relu", name="conv1"),
        layers.MaxPooling2D(2, name="pool1"),
        layers.Conv2D(64, 5, padding="same", activation="relu", name="conv2"),
        layers.MaxPooling2D(2, name="pool2"),
        layers.Flatten(name="flatten"),
        layers.Dense(512, activation="relu", name="fc1"),
        layers.Dense(checks.whole(num_classes, "num_classes", 2, "e.g. 10"), name="logits"),
    ]
    return keras.Sequential(stack, name="lenet5")


def cifar10_cnn(input_shape=(24, 24, 3), num_classes: int = 10):
    """The CIFAR-10 CNN of TensorFlow's multi-GPU tutorial (24x24 crops), an uncompiled
    ``keras.Sequential`` producing logits."""
    import keras  # here: scaling and cards (lesson 09) import models without TF
    from keras import layers

    shape = checks.shape(input_shape, "input_shape", 3, "(24, 24, 3)")
    lrn = _lrn_class()
    stack = [
        keras.Input(shape),
        layers.Conv2D(64, 5, padding="same", activation="relu", name="conv1"),
        layers.MaxPooling2D(3, strides=2, padding="same", name="pool1"),
        lrn(name="norm1"),
        layers.Conv2D(64, 5, padding="same", activation="relu", name="conv2"),
        lrn(name="norm2"),
        layers.MaxPooling2D(3, strides=2, padding="same", name="pool2"),
        layers.Flatten(name="flatten"),
        layers.Dense(384, activation="relu", name="local3"),
        layers.Dense(192, activation="relu", name="local4"),
        layers.Dense(checks.whole(num_classes, "num_classes", 2, "e.g. 10"), name="logits"),
    ]
    return keras.Sequential(stack, name="cifar10_cnn")


def mnist_mlp(
    input_shape=(28, 28, 1), num_classes: int = 10, *, hidden_units: int = 500, dropout: float = 0.1
):
    """The TensorBoard chapter's perceptron: flatten -> hidden (ReLU) -> dropout -> logits.

    ``dropout`` is the fraction dropped while training (the seed keeps 0.9, i.e. drops 0.1).
    Returns an uncompiled ``keras.Sequential`` producing logits.
    """
    import keras  # here: scaling and cards (lesson 09) import models without TF
    from keras import layers

    shape = checks.shape(input_shape, "input_shape")
    hidden_units = checks.whole(hidden_units, "hidden_units", 1, "e.g. 500, as the seed")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout is the fraction dropped and must be in [0, 1), got {dropout!r}.")
    stack = [
        keras.Input(shape),
        layers.Flatten(name="flatten"),
        layers.Dense(hidden_units, activation="relu", name="layer1"),
        layers.Dropout(dropout, name="dropout"),
        layers.Dense(checks.whole(num_classes, "num_classes", 2, "e.g. 10"), name="layer2"),
    ]
    return keras.Sequential(stack, name="mnist_mlp")


MODELS = {"lenet5": lenet5, "cifar10_cnn": cifar10_cnn, "mnist_mlp": mnist_mlp}

#: The example shape each model is built for by default (and trains on with synthetic data).
INPUT_SHAPES = {"lenet5": (28, 28, 1), "cifar10_cnn": (24, 24, 3), "mnist_mlp": (28, 28, 1)}


def build(name: str, **kwargs):
    """Build the model ``name`` (one of ``MODELS``) with ``kwargs`` (``input_shape``, ...)."""
    return MODELS[checks.one_of(name, MODELS, "model")](**kwargs)


def make_train_step(model, optimizer, device: str, *, loss_fn=None):
    """Lesson 01's step as a ``tf.function``: ``step(x, y)`` trains ``model`` (built on
    ``device``) on the whole batch there and returns its mean loss, ``loss_fn(labels, logits)``
    (default: cross-entropy from logits). The throughput runs' single-device baseline."""
    import keras  # here: scaling and cards (lesson 09) import models without TF
    import tensorflow as tf

    loss_fn = loss_fn or keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.device(device):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def count_params(model) -> int:
    """Number of trainable parameters (weights and biases)."""
    return int(sum(math.prod(v.shape) for v in model.trainable_weights))


def layer_flops(model) -> list[tuple[str, int]]:
    """Forward-pass FLOPs per example, layer by layer.

    Counts what dominates: a multiply-add is 2 FLOPs in convolutions and dense
    layers, plus one per bias add. Activations, pooling, normalisation and
    dropout are left out (well under 1% for these models). Returns
    ``[(layer name, flops), ...]`` in model order.
    """
    import keras  # here: scaling and cards (lesson 09) import models without TF

    rows = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.Conv2D):
            kh, kw = layer.kernel_size
            c_in = layer.input.shape[-1]
            _, h_out, w_out, c_out = layer.output.shape
            positions = h_out * w_out * c_out
            flops = 2 * kh * kw * c_in * positions + (positions if layer.use_bias else 0)
        elif isinstance(layer, keras.layers.Dense):
            n_in, n_out = layer.kernel.shape
            flops = 2 * n_in * n_out + (n_out if layer.use_bias else 0)
        else:
            flops = 0
        rows.append((layer.name, int(flops)))
    return rows


def flops_per_example(model, *, training: bool = False) -> int:
    """Estimated FLOPs to process one example (``training``: with the backward pass, x
    ``TRAINING_FLOPS_FACTOR``)."""
    forward = sum(f for _, f in layer_flops(model))
    return forward * (TRAINING_FLOPS_FACTOR if training else 1)


def describe(model) -> str:
    """A table of layers with their output shapes, parameters and forward FLOPs."""
    flops = dict(layer_flops(model))
    rows = [("layer", "output shape", "params", "MFLOPs")]
    for layer in model.layers:
        shape = "x".join(str(d) for d in layer.output.shape[1:])
        rows.append(
            (layer.name, shape, f"{layer.count_params():,}", f"{flops[layer.name] / 1e6:.2f}")
        )
    rows.append(("total", "", f"{count_params(model):,}", f"{flops_per_example(model) / 1e6:.2f}"))
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    fmt = lambda row: "  ".join(  # noqa: E731
        cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))
    )
    lines = [fmt(r) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    return "\n".join(lines)
