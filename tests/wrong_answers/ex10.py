"""Wrong answers for exercises/10_making_data_parallelism_pay.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "10_making_data_parallelism_pay.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
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
    Wrong(  # red team 2: the lesson's own way of cutting, right only when the larger come first
        1,
        "shard sizes from np.array_split of the parameter count, not from the shards",
        _zero1(
            sizes="[len(p) for p in np.array_split(np.arange(int(grads[0].shape[0])), "
            "len(devices))]"
        ),
        check="1",
        expect=r"(?s)failed for 7 parameters over 3 device\(s\) \(shards of \[2, 2, 3\]\).*"
        r"np\.array_split",
    ),
    Wrong(  # red team 2: dpkit's helper is allowed, but it assumes the same layout
        1,
        "shard sizes from dpkit's sharded.shard_sizes",
        "from dpkit import sharded\n\n"
        + _zero1(sizes="sharded.shard_sizes(int(grads[0].shape[0]), len(devices))"),
        check="1",
        expect=r"(?s)failed for 7 parameters .*\[2, 2, 3\].*shards\[c\]\.shape",
    ),
    Wrong(  # red team 2
        1,
        "the shards gathered in reverse order",
        _zero1(gathered="[tf.identity(s) for s in shards[::-1]]"),
        check="1",
        expect=r"device 0's copy holds stale values in shard 0 \(or another shard's\).*in order",
    ),
    Wrong(  # red team 2
        1,
        "one whole vector, the same tensor for every device",
        _zero1().replace("return whole", "return [whole[0]] * len(devices)"),
        check="1",
        expect=r"vector 1 lives on .*CPU:0, not on .*tf\.device\(devices\[i\]\)",
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
    Wrong(  # the gap the author left, closed by red team 2 with a late layer's overflow
        2,
        "only the first gradient checked for overflow",
        _scaled(finite="bool(tf.reduce_all(tf.math.is_finite(grads[0])))"),
        check="2",
        expect=r"the last layer's kernel gradient overflows float16.*returned True.*not only "
        r"the first",
    ),
    Wrong(  # red team 2: the loop keeps only the last gradient's verdict
        2,
        "a loop whose flag keeps only the last gradient's verdict",
        _scaled(
            finite="None\nfor g in grads:\n    finite = bool(tf.reduce_all(tf.math.is_finite(g)))"
        ),
        check="2",
        expect=r"the last layer's kernel gradient overflows float16.*returned True",
    ),
    Wrong(  # red team 2: an overflow is inf; NaN comes only when an inf meets a zero or -inf
        2,
        "NaN checked for, not inf",
        _scaled(finite="not any(bool(tf.reduce_any(tf.math.is_nan(g))) for g in grads)"),
        check="2",
        expect=r"overflows float16 to inf .*returned True.*not NaN only",
    ),
    Wrong(  # red team 2
        2,
        "the scaled loss compared with float16's largest value",
        _scaled(finite="bool(scaled_loss < 65504)"),
        check="2",
        expect=r"the scaled loss stay finite, and your step returned True",
    ),
    Wrong(  # red team 2: skipping only the gradients that overflowed
        2,
        "the finite gradients applied when another overflowed",
        _scaled(apply_if="True").replace(
            "zip(grads, model.trainable_variables)",
            "[(g, v) for g, v in zip(grads, model.trainable_variables)\n"
            "     if bool(tf.reduce_all(tf.math.is_finite(g)))] or [(tf.zeros_like(grads[0]), "
            "model.trainable_variables[0])]",
        ),
        check="2",
        expect=r"returned False but changed the weights.*skip the whole update",
    ),
    Wrong(  # red team 2: non-finite values zeroed and the rest applied
        2,
        "the non-finite gradients zeroed and the step applied",
        _scaled(apply_if="True").replace(
            "zip(grads, model.trainable_variables)",
            "[(tf.where(tf.math.is_finite(g), g, 0.0), v)\n"
            "     for g, v in zip(grads, model.trainable_variables)]",
        ),
        check="2",
        expect=r"returned False but changed the weights",
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
