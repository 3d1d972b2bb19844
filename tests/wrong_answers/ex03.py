"""Wrong answers for exercises/03_gradient_averaging.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "03_gradient_averaging.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "the colleague's step unchanged"

# The solution's average, with the division and the None case left open.
_AVERAGE = """
averaged = []
for pairs in zip(*tower_grads):
    grads = [g for g, _ in pairs]
    variable = pairs[0][1]
    if grads[0] is None:
        averaged.append(({none}, variable))
    else:
        averaged.append(({mean}, variable))
return averaged
"""


def _average(none="None", mean="tf.add_n(grads) / len(grads)"):
    return _AVERAGE.format(none=none, mean=mean)


# The solution's step, with the parts the wrong answers change left open.
_STEP = """
batch = int(x.shape[0])
sizes = [len(part) for part in np.array_split(np.arange(batch), len(devices))]
tower_grads = []
for device, xi, yi in zip({devices}, tf.split(x, {split}), tf.split(y, {split})):
    with tf.device(device):
        with tf.GradientTape() as tape:
            per_example = per_example_loss(yi, model(xi, training=True))
            loss = {loss}
        tower_grads.append(tape.gradient(loss, model.trainable_variables))
grads = [{combine} for g in zip(*tower_grads)]
optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""
_SCALED = "tf.nn.compute_average_loss(per_example, global_batch_size={})"
_RIGHT = _SCALED.format("batch")


def _step(devices="devices", split="sizes", loss=_RIGHT, combine="tf.add_n(list(g))"):
    return _STEP.format(devices=devices, split=split, loss=loss, combine=combine)


WRONG: list[Wrong] = [
    # 1. average_gradients
    Wrong(
        1,
        "divided by NUM_DEVICES, not the number of towers",
        _average(mean="tf.add_n(grads) / NUM_DEVICES"),
        check="1",
        expect=r"2 tower\(s\): your average of kernel is 0.5 times the mean.*NUM_DEVICES",
    ),
    Wrong(
        1,
        "gradients without their variables",
        "return [tf.add_n([g for g, _ in pairs]) / len(pairs) for pairs in zip(*tower_grads)]",
        check="1",
        expect=r"2 tower\(s\): for kernel you return a .*, not a \(gradient, variable\) pair",
    ),
    Wrong(
        1,
        "summed not averaged",
        _average(mean="tf.add_n(grads)"),
        check="1",
        expect=r"2 tower\(s\): your average of kernel is 2 times the mean",
    ),
    Wrong(
        1,
        "averaged within each tower",
        "return [(tf.add_n([g for g, _ in pairs]) / len(pairs), pairs[0][1]) "
        "for pairs in tower_grads]",
        check="1",
        expect=r"2 tower\(s\): your code raised InvalidArgumentError",
    ),
    Wrong(
        1,
        "the first tower's gradients",
        "return list(tower_grads[0])",
        check="1",
        expect=r"2 tower\(s\): kernel vs NumPy's mean: differ",
    ),
    Wrong(
        1,
        "pairs in the wrong order",
        _average()
        .replace("(None, variable)", "(variable, None)")
        .replace(
            "(tf.add_n(grads) / len(grads), variable)",
            "(variable, tf.add_n(grads) / len(grads))",
        ),
        check="1",
        expect=r"2 tower\(s\): the pair for kernel holds .*not the variable itself",
    ),
    Wrong(
        1,
        "dpkit's average_gradients",
        """
        from dpkit.gradients import average_gradients as average

        return average(tower_grads)
        """,
        check="1",
        expect=r"your code calls dpkit's gradients.average_gradients",
    ),
    Wrong(
        1,
        "None not handled",
        "return [(tf.add_n([g for g, _ in pairs]) / len(pairs), pairs[0][1]) "
        "for pairs in zip(*tower_grads)]",
        check="1",
        expect=r"3 tower\(s\), aux_bias None in every tower: your code raised",
    ),
    # red team, answer 1
    Wrong(
        1,
        "None made zeros",
        _average(none="tf.zeros_like(variable)"),
        check="1",
        expect=r"aux_bias has no gradient in any tower, and you return a .*: keep None",
    ),
    Wrong(
        1,
        "divided by the number of variables",
        _average(mean="tf.add_n(grads) / len(tower_grads[0])"),
        check="1",
        expect=r"2 tower\(s\): your average of kernel is 0.5 times the mean",
    ),
    Wrong(
        1,
        "the mean of the first two towers",
        _average(mean="tf.add_n(grads[:2]) / 2"),
        check="1",
        expect=r"3 tower\(s\), aux_bias None in every tower: kernel vs NumPy's mean: differ",
    ),
    Wrong(
        1,
        "pairs sorted by variable name",
        _average().replace(
            "zip(*tower_grads)", "sorted(zip(*tower_grads), key=lambda p: p[0][1].path)"
        ),
        check="1",
        expect=r"2 tower\(s\): the pair for kernel holds aux_bias",
    ),
    Wrong(
        1,
        "None skipped, not kept",
        _AVERAGE.replace(
            "        averaged.append(({none}, variable))\n", "        continue\n"
        ).format(mean="tf.add_n(grads) / len(grads)"),
        check="1",
        expect=r"3 tower\(s\), aux_bias None in every tower: 3 items for 4 variables",
    ),
    Wrong(
        1,
        "the last tower counted twice",
        _average(mean="tf.add_n(grads + grads[-1:]) / (len(grads) + 1)"),
        check="1",
        expect=r"2 tower\(s\): kernel vs NumPy's mean: differ",
    ),
    # 2. fixed_tower_step
    Wrong(
        2,
        "the colleague's step unchanged",
        _step(
            devices="devices",
            split="NUM_DEVICES",
            loss=_SCALED.format("GLOBAL_BATCH_SIZE"),
            combine="tf.add_n(list(g)) / len(g)",
        ),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: your step moves the weights 0.25 times as far "
        r".* 1/4: .*not averaged as well",
    ),
    Wrong(
        2,
        "only the double average fixed",
        _step(split="NUM_DEVICES", loss=_SCALED.format("GLOBAL_BATCH_SIZE")),
        check="2",
        expect=r"3 tower\(s\) on a batch of 10: your code raised InvalidArgumentError",
    ),
    Wrong(
        2,
        "a fixed GLOBAL_BATCH_SIZE",
        _step(loss=_SCALED.format("GLOBAL_BATCH_SIZE")),
        check="2",
        expect=r"3 tower\(s\) on a batch of 10: your step moves the weights 0.31 times as far"
        r".*a fixed GLOBAL_BATCH_SIZE",
    ),
    Wrong(
        2,
        "shard mean loss summed over towers",
        _step(loss="tf.reduce_mean(per_example)"),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: your step moves the weights 4 times as far",
    ),
    Wrong(
        2,
        "no towers, one big batch",
        """
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(per_example_loss(y, model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """,
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: the model ran on batches of \[32\]",
    ),
    Wrong(
        2,
        "every tower on the first device",
        _step(devices="[devices[0]] * len(devices)"),
        check="2",
        expect=r"the towers ran on \[\('CPU', 3\), \('CPU', 3\), \('CPU', 3\), \('CPU', 3\)\], "
        r".*every tower ran on \('CPU', 3\)",
    ),
    Wrong(
        2,
        "the learning rate scaled by N at every call",
        _step(combine="tf.add_n(list(g)) / len(g)").replace(
            "optimizer.apply_gradients(",
            "optimizer.learning_rate.assign(optimizer.learning_rate * len(devices))\n"
            "optimizer.apply_gradients(",
        ),
        check="2",
        expect=r"a second step .* differ from two steps of one device",
    ),
    Wrong(
        2,
        "backward passes outside the towers' devices",
        _step().replace(
            "        tower_grads.append(tape.gradient(loss, model.trainable_variables))\n",
            "    tower_grads.append(tape.gradient(loss, model.trainable_variables))\n",
        ),
        check="2",
        expect=r"tower 0 ran forward on \('CPU', 3\), but its backward pass ran on \('CPU', 0\)",
    ),
    Wrong(
        2,
        "each tower's gradients applied on their own",
        _step(combine="g").replace(
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "for g in tower_grads:\n"
            "    optimizer.apply_gradients(zip(g, model.trainable_variables))",
        ),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: one call of your step made 4 optimizer updates",
    ),
    # red team, answer 2
    Wrong(
        2,
        "compute_average_loss without the global batch, averaged",
        _step(loss="tf.nn.compute_average_loss(per_example)", combine="tf.add_n(list(g)) / len(g)"),
        check="2",
        expect=r"3 tower\(s\) on a batch of 10: your step is the plain mean .*\[4, 3, 3\]",
    ),
    Wrong(
        2,
        "compute_average_loss without the global batch, summed",
        _step(loss="tf.nn.compute_average_loss(per_example)"),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: your step moves the weights 4 times as far",
    ),
    Wrong(
        2,
        "the global batch as shard size times towers",
        _step(loss=_SCALED.format("int(xi.shape[0]) * len(devices)")),
        check="2",
        expect=r"3 tower\(s\) on a batch of 10: your step is the plain mean",
    ),
    Wrong(
        2,
        "the notebook's devices, not the argument",
        _step(devices="setup.devices").replace("len(devices)", "len(setup.devices)"),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: the towers ran on \[\('CPU', 0\), \('CPU', 1\), "
        r"\('CPU', 2\), \('CPU', 3\)\], .*: tower i ran on device number i",
    ),
    Wrong(
        2,
        "ceil-sized shards",
        _step().replace(
            "sizes = [len(part) for part in np.array_split(np.arange(batch), len(devices))]",
            "step = -(-batch // len(devices))\n"
            "sizes = [min(step, batch - k * step) for k in range(len(devices))]",
        ),
        check="2",
        expect=r"3 tower\(s\) on a batch of 10: the model ran on batches of \[4, 4, 2\]",
    ),
    Wrong(
        2,
        "dpkit's tower step",
        """
        from dpkit.towers import make_tower_train_step as make_step

        make_step(model, optimizer, devices, weighted=True)(x, y)
        """,
        check="2",
        expect=r"your code calls dpkit's towers.make_tower_train_step",
    ),
    # red team, second round
    Wrong(
        1,
        "divided by the length of a pair",
        _average(mean="tf.add_n(grads) / len(pairs[0])"),
        check="1",
        expect=r"3 tower\(s\), aux_bias None in every tower: your average of kernel is 1.5 times",
    ),
    Wrong(
        2,
        "the global batch as towers times the largest shard",
        _step(loss=_SCALED.format("max(sizes) * len(devices)")),
        check="2",
        expect=r"3 tower\(s\) on a batch of 10: your step moves the weights 0.83 times as far",
    ),
    Wrong(
        2,
        "applied one variable at a time",
        _step(combine="tf.add_n(list(g))").replace(
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "for g, v in zip(grads, model.trainable_variables):\n"
            "    optimizer.apply_gradients([(g, v)])",
        ),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: your code raised ValueError: Unknown variable",
    ),
    # red team, third round
    Wrong(
        1,
        "the averages written into the first tower's list",
        """
        first = tower_grads[0]
        for k, pairs in enumerate(zip(*tower_grads)):
            grads = [g for g, _ in pairs]
            if grads[0] is not None:
                first[k] = (tf.add_n(grads) / len(grads), pairs[0][1])
        return first
        """,
        check="1",
        expect=r"2 tower\(s\): your code changed tower_grads: build a new list",
    ),
    Wrong(
        1,
        "NumPy's mean in float64",
        _average(mean="tf.constant(np.mean(np.stack(grads), axis=0, dtype=np.float64))"),
        check="1",
        expect=r"2 tower\(s\): your average of kernel is float64, its variable float32",
    ),
    Wrong(
        2,
        "the global batch capped at GLOBAL_BATCH_SIZE",
        _step(loss=_SCALED.format("min(batch, GLOBAL_BATCH_SIZE)")),
        check="2",
        expect=r"3 tower\(s\) on a batch of 44: your step moves the weights 1.4 times as far",
    ),
    Wrong(
        2,
        "the remainder on the last tower",
        _step().replace(
            "sizes = [len(part) for part in np.array_split(np.arange(batch), len(devices))]",
            "base = batch // len(devices)\n"
            "sizes = [base] * (len(devices) - 1) + [batch - base * (len(devices) - 1)]",
        ),
        check="2",
        expect=r"3 tower\(s\) on a batch of 44: the model ran on batches of \[14, 14, 16\]",
    ),
    Wrong(
        2,
        "strided shards",
        _step(split="len(devices)").replace(
            "zip(devices, tf.split(x, len(devices)), tf.split(y, len(devices)))",
            "zip(devices, [x[i::len(devices)] for i in range(len(devices))], "
            "[y[i::len(devices)] for i in range(len(devices))])",
        ),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: the towers' shards, in order, are not the batch",
    ),
    Wrong(
        2,
        "the model called without training=True",
        _step().replace("model(xi, training=True)", "model(xi)"),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: tower 0 called the model with training=None",
    ),
    # issue 46: the check gives the devices last first, so device i is not CPU:i
    Wrong(
        2,
        "a device name typed in, f'/cpu:{i}'",
        _step(devices='[f"/cpu:{i}" for i in range(len(devices))]'),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: the towers ran on \[\('CPU', 0\), \('CPU', 1\), "
        r"\('CPU', 2\), \('CPU', 3\)\], not on \[\('CPU', 3\), .*: tower i ran on device number i",
    ),
    Wrong(
        2,
        "the notebook's setup.devices, as many as given",
        _step(devices="setup.devices[: len(devices)]"),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: the towers ran on \[\('CPU', 0\), \('CPU', 1\), "
        r"\('CPU', 2\), \('CPU', 3\)\], not on \[\('CPU', 3\), .*: tower i ran on device number i",
    ),
    Wrong(
        2,
        "the devices sorted",
        _step(devices="sorted(devices)"),
        check="2",
        expect=r"4 tower\(s\) on a batch of 32: .*: tower i ran on device number i, .*not the list "
        r"sorted",
    ),
]
