"""What one data-parallel replica holds in memory, counted from its variables (lesson 10).

Plain data parallelism keeps on every device a whole copy of the **parameters**, their
**gradients** (as big as the parameters), the **optimizer's slots** (Adam keeps two per
weight, its moving averages of the gradient and of its square) and the **activations** of
the forward pass that the backward pass reads, which grow with the batch. The first three
do not shrink when you add devices; only the batch per device does.

:func:`variable_bytes` counts what variables (or tensors) hold, :func:`slot_bytes` an
optimizer's slots, :func:`activation_bytes` the layer outputs of a forward pass on a real
batch (a proxy for the activations, often an over-count), and :func:`replica` all four for
one replica. :func:`bytes_per_parameter` is the
hand count per parameter, :func:`largest_model` the most parameters a device of a given
size holds at that count.
"""

from __future__ import annotations

from dataclasses import dataclass

import keras

from dpkit.plumbing import checks

#: bytes of one value, by dtype name
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "int64": 8, "int32": 4}


def _size(x) -> int:
    """Bytes of one variable or tensor: its element count times its dtype's size."""
    shape, dtype = x.shape, getattr(x.dtype, "name", str(x.dtype))
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"cannot size a {dtype} value; give float or int tensors.")
    count = 1
    for dim in shape:
        count *= int(dim)
    return count * DTYPE_BYTES[dtype]


def variable_bytes(values) -> int:
    """Bytes that a list of variables or tensors holds (None entries, as a missing gradient,
    count zero)."""
    return sum(_size(v) for v in values if v is not None)


def slots(optimizer) -> list:
    """The optimizer's per-weight slots: every variable it made that is not one of its
    scalars (the step counter, the learning rate). Build it first
    (``optimizer.build(model.trainable_variables)``)."""
    if not optimizer.built:
        raise ValueError(
            "the optimizer has no slots yet: call optimizer.build(model.trainable_variables)."
        )
    inner = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer's own
    return [v for v in inner.variables if len(v.shape) > 0]


def slot_bytes(optimizer) -> int:
    """Bytes of the optimizer's per-weight slots (:func:`slots`)."""
    return variable_bytes(slots(optimizer))


def activation_bytes(model, x) -> int:
    """Bytes of every layer's output in a forward pass of ``model`` (a Keras ``Sequential``
    or functional model) on the batch ``x``, measured from the tensors the layers return
    (their dtype follows the dtype policy).

    A proxy for the activations the backward pass keeps, and often an over-count: a layer
    that returns its input tensor (``Dropout`` at rate 0, or outside training) is counted a
    second time, a reshape (``Flatten``) counts its input's bytes again, and what the backward
    pass really keeps is whatever each op's gradient needs, which this does not trace."""
    outputs = [layer.output for layer in model.layers]
    probe = keras.Model(model.inputs[0], outputs)
    return variable_bytes(probe(x, training=True))


@dataclass(frozen=True)
class Replica:
    """The bytes one replica holds, by kind."""

    parameters: int
    gradients: int
    slots: int
    activations: int

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.slots + self.activations


def replica(model, optimizer, x) -> Replica:
    """What one replica of ``model`` trained by ``optimizer`` holds for the batch ``x``:
    the parameters, gradients of the same dtype as the variables, the optimizer's slots and
    the activations of ``x`` (:func:`activation_bytes`)."""
    params = variable_bytes(model.trainable_variables)
    return Replica(params, params, slot_bytes(optimizer), activation_bytes(model, x))


def bytes_per_parameter(weights: int = 4, gradients: int = 4, slots: int = 2, slot: int = 4):
    """Bytes per parameter by hand: a weight, its gradient and ``slots`` optimizer slots of
    ``slot`` bytes (Adam in float32: 4 + 4 + 2 x 4 = 16)."""
    for value, what in ((weights, "weights"), (gradients, "gradients"), (slot, "slot")):
        checks.whole(value, what, 0, "4 for float32, 2 for 16 bits")
    return weights + gradients + checks.whole(slots, "slots", 0, "2 for Adam") * slot


def largest_model(device_bytes: float, per_parameter: float) -> int:
    """The most parameters that fit ``device_bytes`` at ``per_parameter`` bytes each, with
    nothing left for activations (an upper bound)."""
    checks.positive(device_bytes, "device_bytes", "16e9 for a 16 GB device", "byte count")
    checks.positive(per_parameter, "per_parameter", "16 for Adam in float32", "byte count")
    return int(device_bytes // per_parameter)
