"""Wrong answers for exercises/02_towers.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "02_towers.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "a plain mean of the uneven towers"

_REFUSE = """
batch = int(x.shape[0])
if {test}:
    raise ValueError({message})
return {shards}
"""
_NEAREST = 'f"use {batch - batch % num_towers} or {batch - batch % num_towers + num_towers}"'
_EQUAL = "tf.split(x, num_towers), tf.split(y, num_towers)"

# The solution's towers, with the parts the wrong answers change left open.
_TOWERS = """
batch = int(x.shape[0])
sizes = [len(part) for part in np.array_split(np.arange(batch), len(devices))]
tower_grads = []
for i, (xi, yi, size) in enumerate(zip(tf.split(x, sizes), tf.split(y, sizes), sizes)):
    with tf.device({device}):
        with tf.GradientTape() as tape:
            loss = {loss}
        grads = tape.gradient(loss, model.trainable_variables)
    tower_grads.append([g * {weight} for g in grads])
return [{combine} for g in zip(*tower_grads)]
"""
_MEAN = "tf.reduce_mean(per_example_loss(yi, model(xi, training=True)))"
_SUM = "tf.reduce_sum(per_example_loss(yi, model(xi, training=True)))"


def _towers(device="devices[i]", loss=_MEAN, weight="(size / batch)", combine="tf.add_n(list(g))"):
    return _TOWERS.format(device=device, loss=loss, weight=weight, combine=combine)


WRONG: list[Wrong] = [
    # 1. split_evenly
    Wrong(
        1,
        "tf.split raises its own error",
        f"return {_EQUAL}",
        check="1",
        expect=r"raised InvalidArgumentError, not a ValueError",
    ),
    Wrong(
        1,
        "uneven shards instead of an error",
        """
        return (
            [tf.constant(s) for s in np.array_split(np.asarray(x), num_towers)],
            [tf.constant(s) for s in np.array_split(np.asarray(y), num_towers)],
        )
        """,
        check="1",
        expect=r"a batch of 63 for 4 towers does not divide, so split_evenly should raise",
    ),
    Wrong(
        1,
        "strided shards",
        _REFUSE.format(
            test="batch % num_towers",
            message=_NEAREST,
            shards="[x[i::num_towers] for i in range(num_towers)], "
            "[y[i::num_towers] for i in range(num_towers)]",
        ),
        check="1",
        expect=r"a batch of 64 on 2 towers: image shard 0 differs",
    ),
    Wrong(
        1,
        "a message that names no batch size",
        _REFUSE.format(
            test="batch % num_towers", message='"the batch does not divide"', shards=_EQUAL
        ),
        check="1",
        expect=r"should name the two nearest batch sizes that would work, 60 and 64",
    ),
    Wrong(
        1,
        "use a multiple of N",
        _REFUSE.format(
            test="batch % num_towers",
            message='f"use a multiple of {num_towers}"',
            shards=_EQUAL,
        ),
        check="1",
        expect=r"'use a multiple of 4'.* 60 and 64",
    ),
    Wrong(
        1,
        "suggests the batch plus one",
        _REFUSE.format(
            test="batch % num_towers",
            message='f"{batch} does not split into {num_towers}; use {batch + 1}"',
            shards=_EQUAL,
        ),
        check="1",
        expect=r"batch of 63 for 4 towers: .* 60 and 64",
    ),
    Wrong(
        1,
        "names only the size below",
        _REFUSE.format(
            test="batch % num_towers",
            message='f"use {batch - batch % num_towers}"',
            shards=_EQUAL,
        ),
        check="1",
        expect=r"'use 60'.* 60 and 64",
    ),
    Wrong(
        1,
        "pairs of shards",
        _REFUSE.format(
            test="batch % num_towers",
            message=_NEAREST,
            shards="list(zip(tf.split(x, num_towers), tf.split(y, num_towers)))",
        ),
        check="1",
        expect=r"a batch of 64 on 1 towers: return two lists",
    ),
    Wrong(
        1,
        "dpkit's split_batch",
        """
        from dpkit.towers import split_batch as split

        xs, ys, _ = split(x, y, num_towers)
        return xs, ys
        """,
        check="1",
        expect=r"your code calls dpkit's towers.split_batch",
    ),
    # red team, answer 1
    Wrong(
        1,
        "tests the notebook's NUM_DEVICES, not num_towers",
        _REFUSE.format(test="batch % NUM_DEVICES", message=_NEAREST, shards=_EQUAL),
        check="1",
        expect=r"a batch of 30 on 3 towers: your code raised ValueError",
    ),
    Wrong(
        1,
        "the shards in reverse order",
        _REFUSE.format(
            test="batch % num_towers",
            message=_NEAREST,
            shards="tf.split(x, num_towers)[::-1], tf.split(y, num_towers)[::-1]",
        ),
        check="1",
        expect=r"a batch of 64 on 2 towers: image shard 0 differs",
    ),
    Wrong(
        1,
        "the labels left whole",
        _REFUSE.format(
            test="batch % num_towers", message=_NEAREST, shards="tf.split(x, num_towers), [y]"
        ),
        check="1",
        expect=r"a batch of 64 on 2 towers: 1 label shards, want 2",
    ),
    Wrong(
        1,
        "the size above is the batch plus N",
        _REFUSE.format(
            test="batch % num_towers",
            message='f"use {batch - batch % num_towers} or {batch + num_towers}"',
            shards=_EQUAL,
        ),
        check="1",
        expect=r"'use 60 or 67'",
    ),
    # 2. uneven_tower_gradients
    Wrong(
        2,
        "a plain mean of the uneven towers",
        _towers(weight="1", combine="tf.add_n(list(g)) / len(g)"),
        check="2",
        expect=r"2 tower\(s\) on a batch of 9: your gradients are the plain mean of the towers'",
    ),
    Wrong(
        2,
        "equal shards with tf.split",
        _towers().replace(
            "tf.split(x, sizes), tf.split(y, sizes)", _EQUAL.replace("num_towers", "len(devices)")
        ),
        check="2",
        expect=r"2 tower\(s\) on a batch of 9: your code raised InvalidArgumentError.*shard sizes",
    ),
    Wrong(
        2,
        "no tf.device",
        _towers(device='"/device:CPU:0"'),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: the towers ran on \[\('CPU', 0\)\], not on "
        r"\[\('CPU', 3\)\]: .*and not without tf.device",
    ),
    Wrong(
        2,
        "summed losses averaged over NUM_DEVICES",
        _towers(loss=_SUM, weight="(1 / batch)", combine="tf.add_n(list(g)) / NUM_DEVICES"),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: your gradients are 0.25 times one device's",
    ),
    Wrong(
        2,
        "the loss divided by a fixed batch of 12",
        _towers(loss=_SUM, weight="(1 / 12)"),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: your gradients are 0.58 times",
    ),
    Wrong(
        2,
        "tape.gradient outside the tower's device",
        _TOWERS.format(
            device="devices[i]", loss=_MEAN, weight="(size / batch)", combine="tf.add_n(list(g))"
        ).replace(
            "        grads = tape.gradient(loss, model.trainable_variables)\n",
            "    grads = tape.gradient(loss, model.trainable_variables)\n",
        ),
        check="2",
        expect=r"tower 0 ran forward on \('CPU', 3\), but its backward pass ran on \('CPU', 0\)",
    ),
    Wrong(
        2,
        "one forward pass outside the towers",
        """
        batch = int(x.shape[0])
        sizes = [len(part) for part in np.array_split(np.arange(batch), len(devices))]
        with tf.GradientTape() as tape:
            losses = tf.split(per_example_loss(y, model(x, training=True)), sizes)
            tower_losses = []
            for device, loss in zip(devices, losses):
                with tf.device(device):
                    tower_losses.append(tf.reduce_sum(loss) / batch)
            total = tf.add_n(tower_losses)
        return tape.gradient(total, model.trainable_variables)
        """,
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: the towers ran on \[\('CPU', 0\)\], not on "
        r"\[\('CPU', 3\)\]",
    ),
    Wrong(
        2,
        "every tower on the whole batch",
        """
        tower_grads = []
        for device in devices:
            with tf.device(device):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(per_example_loss(y, model(x, training=True)))
                tower_grads.append(tape.gradient(loss, model.trainable_variables))
        return [tf.add_n(list(g)) / len(g) for g in zip(*tower_grads)]
        """,
        check="2",
        expect=r"the model ran on batches of \[9, 9\]",
    ),
    Wrong(
        2,
        "dpkit's weighted tower_gradients",
        """
        from dpkit import towers as library

        def mean_loss(labels, logits):
            return tf.reduce_mean(per_example_loss(labels, logits))

        grads, _, weights, _ = library.tower_gradients(
            model, mean_loss, x, y, devices, weighted=True
        )
        return [tf.add_n([w * t for w, t in zip(weights, g)]) for g in zip(*grads)]
        """,
        check="2",
        expect=r"your code calls dpkit's towers.tower_gradients",
    ),
    # red team, answer 2
    Wrong(
        2,
        "dpkit's average_gradients with weights",
        _towers(weight="1").replace(
            "return [tf.add_n(list(g)) for g in zip(*tower_grads)]",
            "from dpkit.gradients import average_gradients as avg\n\n"
            "return avg(tower_grads, weights=sizes)",
        ),
        check="2",
        expect=r"your code calls dpkit's gradients.average_gradients",
    ),
    Wrong(
        2,
        "the notebook's devices, not the argument",
        _towers()
        .replace("len(devices)", "len(setup.devices)")
        .replace("devices[i]", "setup.devices[i]"),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: the model ran on batches of \[2, 2, 2, 1\]",
    ),
    Wrong(
        2,
        "ceil-sized shards, the last one short",
        _towers().replace(
            "sizes = [len(part) for part in np.array_split(np.arange(batch), len(devices))]",
            "step = -(-batch // len(devices))\n"
            "sizes = [min(step, batch - k * step) for k in range(len(devices))]",
        ),
        check="2",
        expect=r"3 tower\(s\) on a batch of 10: the model ran on batches of \[4, 4, 2\]",
    ),
    Wrong(
        2,
        "the towers on the devices in reverse",
        _towers(device="devices[len(devices) - 1 - i]"),
        check="2",
        expect=r"2 tower\(s\) on a batch of 9: the towers ran on \[\('CPU', 2\), \('CPU', 3\)\], "
        r"not on \[\('CPU', 3\), \('CPU', 2\)\]: the right devices in another order",
    ),
    Wrong(
        2,
        "each shard's summed loss, added up",
        _towers(loss=_SUM, weight="1"),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: your gradients are 7 times",
    ),
    Wrong(
        2,
        "shares by integer division",
        _towers(weight="(size // batch)"),
        check="2",
        expect=r"2 tower\(s\) on a batch of 9: your gradients are 0 times",
    ),
    Wrong(
        2,
        "weighted, then averaged too",
        _towers(combine="tf.add_n(list(g)) / len(g)"),
        check="2",
        expect=r"2 tower\(s\) on a batch of 9: your gradients are 0.5 times",
    ),
    Wrong(
        2,
        "weights by the shard's size over the largest shard",
        _towers(weight="(size / max(sizes) / len(devices))"),
        check="2",
        expect=r"2 tower\(s\) on a batch of 9: your gradients are 0.9 times",
    ),
    # red team, second round
    Wrong(
        2,
        "the remainder on the last tower",
        _towers().replace(
            "sizes = [len(part) for part in np.array_split(np.arange(batch), len(devices))]",
            "base = batch // len(devices)\n"
            "sizes = [base] * (len(devices) - 1) + [batch - base * (len(devices) - 1)]",
        ),
        check="2",
        expect=r"4 tower\(s\) on a batch of 11: the model ran on batches of \[2, 2, 2, 5\]",
    ),
    Wrong(
        1,
        "a refusal rounded to the nearest multiple",
        _REFUSE.format(
            test="batch % num_towers",
            message='f"use {round(batch / num_towers) * num_towers} or '
            '{round(batch / num_towers) * num_towers + num_towers}"',
            shards=_EQUAL,
        ),
        check="1",
        expect=r"'use 64 or 68'.* 60 and 64",
    ),
    Wrong(
        1,
        "a refusal written for 63 on 4",
        _REFUSE.format(test="batch % num_towers", message='"use 60 or 64"', shards=_EQUAL),
        check="1",
        expect=r"a batch of 64 for 3 towers: .* 63 and 66",
    ),
    # red team, third round
    Wrong(
        1,
        "an assert, not a ValueError",
        """
        batch = int(x.shape[0])
        lower = batch - batch % num_towers
        assert batch % num_towers == 0, f"use {lower} or {lower + num_towers}"
        return tf.split(x, num_towers), tf.split(y, num_towers)
        """,
        check="1",
        expect=r"a batch of 63 for 4 towers failed your assert .*, not a ValueError",
    ),
    Wrong(
        2,
        "the model called without training=True",
        _towers(loss="tf.reduce_mean(per_example_loss(yi, model(xi)))"),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: tower 0 called the model with training=None",
    ),
    Wrong(
        2,
        "a Keras mean loss, not the per_example_loss given",
        _towers(
            loss="keras.losses.SparseCategoricalCrossentropy(from_logits=True)"
            "(yi, model(xi, training=True))"
        ),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: your code never called per_example_loss",
    ),
    Wrong(
        2,
        "the loss outside the tower's device",
        _towers().replace(
            "    with tf.device(devices[i]):\n"
            "        with tf.GradientTape() as tape:\n"
            "            loss = tf.reduce_mean(per_example_loss(yi, model(xi, training=True)))\n",
            "    with tf.GradientTape() as tape:\n"
            "        with tf.device(devices[i]):\n"
            "            logits = model(xi, training=True)\n"
            "        loss = tf.reduce_mean(per_example_loss(yi, logits))\n"
            "    with tf.device(devices[i]):\n",
        ),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: tower 0's loss ran on \('CPU', 0\), not on its "
        r"device \('CPU', 3\)",
    ),
    # issue 46: the check gives the devices last first, so device i is not CPU:i
    Wrong(
        2,
        "a device name typed in, f'/cpu:{i}'",
        _towers(device='f"/cpu:{i}"'),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: the towers ran on \[\('CPU', 0\)\], not on "
        r"\[\('CPU', 3\)\]: tower i ran on device number i, but the devices given come in "
        r"another order",
    ),
    Wrong(
        2,
        "the notebook's setup.devices[i], not the argument's",
        _towers(device="setup.devices[i]"),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: the towers ran on \[\('CPU', 0\)\], not on "
        r"\[\('CPU', 3\)\]: tower i ran on device number i, but the devices given come in "
        r"another order",
    ),
    Wrong(
        2,
        "TensorFlow's logical devices in order",
        _towers(device='tf.config.list_logical_devices("CPU")[i].name'),
        check="2",
        expect=r"1 tower\(s\) on a batch of 7: the towers ran on \[\('CPU', 0\)\], not on "
        r"\[\('CPU', 3\)\]: tower i ran on device number i, but the devices given come in "
        r"another order",
    ),
    Wrong(
        2,
        "the devices sorted",
        _towers(device="sorted(devices)[i]"),
        check="2",
        expect=r"2 tower\(s\) on a batch of 9: the towers ran on \[\('CPU', 2\), \('CPU', 3\)\], "
        r"not on \[\('CPU', 3\), \('CPU', 2\)\]: the right devices in another order",
    ),
]
