"""Wrong answers for exercises/02_towers.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "02_towers.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "every tower on the whole batch"

# The solution's tower loop, with the parts the answers to exercise 2 get wrong left open.
_TOWERS = """
x_shards, y_shards = split_evenly(x, y, len(devices))
tower_grads = []
for i, device in enumerate(devices):
    with {scopes}:
        with tf.GradientTape() as tape:
            loss = loss_fn({data}, training=True))
        tower_grads.append(tape.gradient(loss, model.trainable_variables))
return [tf.add_n(list(g)) {combine} for g in zip(*tower_grads)]
"""
_SCOPES = "tf.device(device), tf.name_scope(f'tower_{i}')"
_SHARD = "y_shards[i], model(x_shards[i]"

WRONG: list[Wrong] = [
    # 1. split_evenly
    Wrong(
        1,
        "tf.split raises its own error",
        "return tf.split(x, num_towers), tf.split(y, num_towers)",
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
        expect=r"63.*should raise ValueError",
    ),
    Wrong(
        1,
        "strided shards",
        """
        if int(x.shape[0]) % num_towers:
            raise ValueError(f"use a multiple of {num_towers}: 60 or 64")
        return [x[i::num_towers] for i in range(num_towers)], [
            y[i::num_towers] for i in range(num_towers)
        ]
        """,
        check="1",
        expect=r"image shard differs",
    ),
    Wrong(
        1,
        "a message that names no batch size",
        """
        if int(x.shape[0]) % num_towers:
            raise ValueError("the batch does not divide")
        return tf.split(x, num_towers), tf.split(y, num_towers)
        """,
        check="1",
        expect=r"name a batch size",
    ),
    # 2. tower_gradients
    Wrong(
        2,
        "every tower on the whole batch",
        _TOWERS.format(
            scopes="tf.device(device), tf.name_scope(f'tower_{i}')",
            data="y, model(x",
            combine="/ len(devices)",
        ),
        check="2",
        expect=r"tower_0's convolution .* sees 64 examples",
    ),
    Wrong(
        2,
        "summed not averaged",
        _TOWERS.format(scopes=_SCOPES, data=_SHARD, combine=""),
        check="2",
        expect=r"4\.00 times the big-batch gradient",
    ),
    Wrong(
        2,
        "no tf.device",
        _TOWERS.format(scopes="tf.name_scope(f'tower_{i}')", data=_SHARD, combine="/ len(devices)"),
        check="2",
        expect=r"is on no device",
    ),
    Wrong(
        2,
        "shard 0 on every tower",
        _TOWERS.format(
            scopes=_SCOPES, data="y_shards[0], model(x_shards[0]", combine="/ len(devices)"
        ),
        check="2",
        expect=r"differs from the big-batch gradient",
    ),
    # 3. make_parallel
    Wrong(
        3,
        "no split, no devices",
        "return fn(**inputs)",
        check="3",
        expect=r"no op named tower_0/",
    ),
    Wrong(
        3,
        "every device on the whole input",
        """
        outputs = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                outputs.append(fn(**inputs))
        return outputs[0]
        """,
        check="3",
        expect=r"tower_0's convolution .* sees 64 examples",
    ),
    Wrong(
        3,
        "split but not placed",
        """
        pieces = {name: tf.split(value, len(devices)) for name, value in inputs.items()}
        outputs = []
        for i in range(len(devices)):
            with tf.name_scope(f"tower_{i}"):
                outputs.append(fn(**{name: parts[i] for name, parts in pieces.items()}))
        return tf.concat(outputs, axis=0)
        """,
        check="3",
        expect=r"is on no device",
    ),
    Wrong(
        3,
        "joined along the wrong axis",
        """
        pieces = {name: tf.split(value, len(devices)) for name, value in inputs.items()}
        outputs = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                outputs.append(fn(**{name: parts[i] for name, parts in pieces.items()}))
        return tf.stack(outputs)
        """,
        check="3",
        expect=r"shape \(4, 16",
    ),
    # found by a second pair of eyes
    Wrong(
        1,
        "suggests the batch plus one",
        """
        batch = int(x.shape[0])
        if batch % num_towers:
            raise ValueError(f"{batch} does not split into {num_towers}; use {batch + 1}")
        return tf.split(x, num_towers), tf.split(y, num_towers)
        """,
        check="1",
        expect=r"batch of 64 for 3 towers: name a batch size that would work",
    ),
    Wrong(
        1,
        "pairs of shards",
        """
        if int(x.shape[0]) % num_towers:
            raise ValueError(f"use a multiple of {num_towers}")
        return list(zip(tf.split(x, num_towers), tf.split(y, num_towers)))
        """,
        check="1",
        expect=r"return two lists",
    ),
    Wrong(
        1,
        "dpkit's split_batch",
        """
        from dpkit import towers as library

        xs, ys, _ = library.split_batch(x, y, num_towers)
        return xs, ys
        """,
        check="1",
        expect=r"your code calls dpkit's towers.split_batch",
    ),
    Wrong(
        2,
        "one forward pass outside the towers",
        """
        x_shards, y_shards = split_evenly(x, y, len(devices))
        with tf.GradientTape(persistent=True) as tape:
            logits = tf.split(model(x, training=True), len(devices))
            losses = []
            for i, device in enumerate(devices):
                with tf.device(device), tf.name_scope(f"tower_{i}"):
                    losses.append(loss_fn(y_shards[i], logits[i]))
        tower_grads = [tape.gradient(loss, model.trainable_variables) for loss in losses]
        return [tf.add_n(list(g)) / len(devices) for g in zip(*tower_grads)]
        """,
        check="2",
        expect=r"tower_0 runs no forward convolution",
    ),
    Wrong(
        2,
        "dpkit's tower_gradients",
        """
        from dpkit import towers as library

        grads, _, _, _ = library.tower_gradients(model, loss_fn, x, y, devices)
        return [tf.add_n(list(g)) / len(devices) for g in zip(*grads)]
        """,
        check="2",
        expect=r"your code calls dpkit's towers.tower_gradients",
    ),
    Wrong(
        3,
        "only the first input split",
        """
        first = next(iter(inputs))
        pieces = tf.split(inputs[first], len(devices))
        outputs = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                outputs.append(fn(**{**inputs, first: pieces[i]}))
        return tf.concat(outputs, axis=0)
        """,
        check="3",
        expect=r"per_example_loss on inputs \['images', 'labels'\]: make_parallel raised",
    ),
    Wrong(
        3,
        "dpkit's make_parallel",
        """
        from dpkit import towers as library

        return library.make_parallel(fn, devices, **inputs)
        """,
        check="3",
        expect=r"your code calls dpkit's towers.make_parallel",
    ),
]
