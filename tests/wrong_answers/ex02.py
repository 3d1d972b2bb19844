"""Wrong answers for exercises/02_towers.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

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
        """
        tower_grads = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                tower_grads.append(tape.gradient(loss, model.trainable_variables))
        return [tf.add_n(list(g)) / len(devices) for g in zip(*tower_grads)]
        """,
        check="2",
        expect=r"tower_0's convolution .* sees 64 examples",
    ),
    Wrong(
        2,
        "summed not averaged",
        """
        x_shards, y_shards = split_evenly(x, y, len(devices))
        tower_grads = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                with tf.GradientTape() as tape:
                    loss = loss_fn(y_shards[i], model(x_shards[i], training=True))
                tower_grads.append(tape.gradient(loss, model.trainable_variables))
        return [tf.add_n(list(g)) for g in zip(*tower_grads)]
        """,
        check="2",
        expect=r"4\.00 times the big-batch gradient",
    ),
    Wrong(
        2,
        "no tf.device",
        """
        x_shards, y_shards = split_evenly(x, y, len(devices))
        tower_grads = []
        for i in range(len(devices)):
            with tf.name_scope(f"tower_{i}"):
                with tf.GradientTape() as tape:
                    loss = loss_fn(y_shards[i], model(x_shards[i], training=True))
                tower_grads.append(tape.gradient(loss, model.trainable_variables))
        return [tf.add_n(list(g)) / len(devices) for g in zip(*tower_grads)]
        """,
        check="2",
        expect=r"is on no device",
    ),
    Wrong(
        2,
        "shard 0 on every tower",
        """
        x_shards, y_shards = split_evenly(x, y, len(devices))
        tower_grads = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                with tf.GradientTape() as tape:
                    loss = loss_fn(y_shards[0], model(x_shards[0], training=True))
                tower_grads.append(tape.gradient(loss, model.trainable_variables))
        return [tf.add_n(list(g)) / len(devices) for g in zip(*tower_grads)]
        """,
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
]
