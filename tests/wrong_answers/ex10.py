"""Wrong answers for exercises/10_making_data_parallelism_pay.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "10_making_data_parallelism_pay.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "the loss scale never undone"

# The solution's sharded update, with the parts the wrong answers change left open.
_ZERO1 = """
{before}sizes = {sizes}
pieces = [tf.split(g, sizes) for g in grads]
for c, device in enumerate(devices):
    with tf.device(device):
        shard_grad = {shard_grad}
        optimizers[c].apply_gradients([({applied}, shards[c])])
whole = []
for device in devices:
    {place}:
        whole.append(tf.concat({gathered}, 0))
return whole
"""


def _zero1(
    before="",
    sizes="[int(s.shape[0]) for s in shards]",
    shard_grad="tf.add_n([p[c] for p in pieces])",
    applied="shard_grad",
    place="with tf.device(device)",
    gathered="[tf.identity(s) for s in shards]",
):
    return _ZERO1.format(
        before=before,
        sizes=sizes,
        shard_grad=shard_grad,
        applied=applied,
        place=place,
        gathered=gathered,
    )


# The solution's loss-scaled step, with the parts the wrong answers change left open.
_SCALED = """
with tf.GradientTape() as tape:
    logits = tf.cast(model(x, training=True), tf.float32)
    scaled_loss = {scaled_loss}
grads = [{unscaled} for g in tape.gradient(scaled_loss, model.trainable_variables)]
finite = {finite}
if {apply_if}:
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
{ret}
"""

_FINITE = "all(bool(tf.reduce_all(tf.math.is_finite(g))) for g in grads)"


def _scaled(
    scaled_loss="loss_fn(y, logits) * scale",
    unscaled="g / scale",
    finite=_FINITE,
    apply_if="finite",
    ret="return finite",
):
    return _SCALED.format(
        scaled_loss=scaled_loss, unscaled=unscaled, finite=finite, apply_if=apply_if, ret=ret
    )


WRONG: list[Wrong] = [
    # 1. zero1_update
    Wrong(
        1,
        "each shard updated with its own device's gradient only (no reduce-scatter)",
        _zero1(shard_grad="pieces[c][c]"),
        check="1",
        expect=r"shard 0 moved with device 0's own gradient only.*reduce-scatter",
    ),
    Wrong(
        1,
        "the gradients averaged, not summed",
        _zero1(shard_grad="tf.add_n([p[c] for p in pieces]) / len(devices)"),
        check="1",
        expect=r"not the sgd update of the summed gradients \(it moved 0.5 times",
    ),
    Wrong(
        1,
        "the shard updated with the whole gradient",
        _zero1(applied="tf.add_n(grads)"),
        check="1",
        expect=r"your update failed for 11 parameters over 2 device",
    ),
    Wrong(
        1,
        "all-gather skipped on the last shard",
        _zero1(
            before="stale = tf.identity(shards[-1])  # kept from before the update\n",
            gathered="[tf.identity(s) for s in shards[:-1]] + [stale]",
        ),
        check="1",
        expect=r"device 0's copy holds stale values in shard 0.*all-gather",
    ),
    Wrong(
        1,
        "uneven shards: sizes of num_params // N",
        _zero1(sizes="[int(grads[0].shape[0]) // len(devices)] * len(devices)"),
        check="1",
        expect=r"your update failed for 11 parameters over 2 device.*shards\[c\]\.shape",
    ),
    Wrong(
        1,
        "every device's copy built on the first device",
        _zero1(place="with tf.device(devices[0])"),
        check="1",
        expect=r"vector 1 lives on .*CPU:0, not on .*tf\.device\(devices\[i\]\)",
    ),
    Wrong(
        1,
        "the shards returned instead of whole vectors",
        _zero1().replace("return whole", "return list(shards)"),
        check="1",
        expect=r"device 0's vector has shape \(6,\), not \(11,\)",
    ),
    Wrong(
        1,
        "dpkit's ZeroOne borrowed",
        "from dpkit import sharded\n"
        "return sharded.all_gather(sharded.reduce_scatter(grads, devices, [1]), devices)",
        check="1",
        expect=r"your code calls dpkit's sharded\.reduce_scatter",
    ),
    Wrong(  # found by red-teaming: the state of Adam lost between calls
        1,
        "a fresh optimizer made for each shard at each call",
        _zero1().replace("optimizers[c].apply", "keras.optimizers.Adam(0.1).apply"),
        check="1",
        expect=r"optimizer 0 took 0 steps in 2 calls",
    ),
    Wrong(  # found by red-teaming: one update per device per shard
        1,
        "every shard updated once per device",
        _zero1(applied="shard_grad / len(devices)").replace(
            "        optimizers[c].apply_gradients",
            "        for _ in devices:\n            optimizers[c].apply_gradients",
        ),
        check="1",
        expect=r"optimizer 0 took [0-9]+ steps in 2 calls|not the (adam|sgd) update",
    ),
    # 2. scaled_step
    Wrong(
        2,
        "the loss scale never undone",
        _scaled(unscaled="g"),
        check="2",
        expect=r"with scale 16 .*16 times as far.*never undone",
    ),
    Wrong(
        2,
        "the loss scale undone twice",
        _scaled(unscaled="g / scale / scale"),
        check="2",
        expect=r"with scale 16 .*0.0625 times as far.*undone twice",
    ),
    Wrong(
        2,
        "the loss never scaled, the gradients still divided",
        _scaled(scaled_loss="loss_fn(y, logits)"),
        check="2",
        expect=r"with scale 16 .*undone twice \(or the loss never scaled\)",
    ),
    Wrong(  # found by red-teaming: scaling that never reaches the backward pass
        2,
        "the scale cancelled inside the tape",
        _scaled(scaled_loss="loss_fn(y, logits) * scale / scale", unscaled="g"),
        check="2",
        expect=r"scale 16384 .*1e-6 times smaller and its gradients round to zero in float16",
    ),
    Wrong(
        2,
        "the loss checked for overflow, not the gradients",
        _scaled(finite="bool(tf.math.is_finite(scaled_loss))"),
        check="2",
        expect=r"2\*\*40 float16's gradients overflow, and your step returned True",
    ),
    Wrong(
        2,
        "the update applied even when a gradient overflowed",
        _scaled(apply_if="True"),
        check="2",
        expect=r"2\*\*40 .* still changed the weights",
    ),
    Wrong(
        2,
        "nothing returned",
        _scaled(ret="pass"),
        check="2",
        expect=r"with scale 1 the gradients are finite and your step returned None",
    ),
]
