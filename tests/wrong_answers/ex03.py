"""Wrong answers for exercises/03_gradient_averaging.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

# One tower's loop, as the solution writes it, for the answers to exercise 2.
_TOWERS = """
tower_grads = []
shards = zip(tf.split(x, NUM_DEVICES), tf.split(y, NUM_DEVICES))
for device, (xi, yi) in zip(setup.devices, shards):
    with tf.device(device), tf.GradientTape() as tape:
        per_example = per_example_loss(yi, model(xi, training=True))
        loss = {loss}
    tower_grads.append(tape.gradient(loss, model.trainable_variables))
grads = [{reduce} for g in zip(*tower_grads)]
optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""
_GLOBAL = "tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH_SIZE)"

WRONG: list[Wrong] = [
    # 1. average_gradients
    Wrong(
        1,
        "gradients without their variables",
        "return [tf.add_n([g for g, _ in pairs]) / len(pairs) for pairs in zip(*tower_grads)]",
        check="1",
        expect=r"not a \(gradient, variable\) pair",
    ),
    Wrong(
        1,
        "summed not averaged",
        "return [(tf.add_n([g for g, _ in pairs]), pairs[0][1]) for pairs in zip(*tower_grads)]",
        check="1",
        expect=r"4\.00 times the big-batch gradient",
    ),
    Wrong(
        1,
        "averaged within each tower",
        "return [(tf.add_n([g for g, _ in pairs]) / len(pairs), pairs[0][1]) "
        "for pairs in tower_grads]",
        check="1",
        expect=r"different shapes .* gradients of different variables",
    ),
    Wrong(
        1,
        "the first tower's gradients",
        "return list(tower_grads[0])",
        check="1",
        expect=r"differs from the big-batch gradient",
    ),
    # 2. fixed_tower_step
    Wrong(
        2,
        "the colleague's step unchanged",
        _TOWERS.format(loss=_GLOBAL, reduce="tf.add_n(list(g)) / len(g)"),
        check="2",
        expect=r"moves the weights 0\.25 times as far",
    ),
    Wrong(
        2,
        "shard mean loss summed over towers",
        _TOWERS.format(loss="tf.reduce_mean(per_example)", reduce="tf.add_n(list(g))"),
        check="2",
        expect=r"moves the weights 4\.00 times as far",
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
        expect=r"ran on batches of \[32\]",
    ),
    Wrong(
        2,
        "every tower on the first device",
        _TOWERS.format(loss=_GLOBAL, reduce="tf.add_n(list(g))").replace(
            "tf.device(device)", "tf.device(setup.devices[0])"
        ),
        check="2",
        expect=r"the towers ran on \[\('CPU', 0\)\]",
    ),
    # 3. ring_all_reduce
    Wrong(
        3,
        "sum on device 0 and copy back",
        """
        with tf.device(devices[0]):
            total = tf.add_n(tensors)
        results = []
        for device in devices:
            with tf.device(device):
                results.append(tf.identity(total))
        return results
        """,
        check="3",
        expect=r"device 0 sends 384 bytes, 3\.00 times the tensor",
    ),
    Wrong(
        3,
        "every device sums everything",
        """
        results = []
        for device in devices:
            with tf.device(device):
                results.append(tf.add_n(tensors))
        return results
        """,
        check="3",
        expect=r"sends 384 bytes, 3\.00 times the tensor",
    ),
    Wrong(
        3,
        "whole tensors passed round the ring",
        """
        n = len(devices)
        partial = tensors[0]
        for i in range(1, n):  # reduce along the ring, whole tensors
            with tf.device(devices[i]):
                partial = partial + tensors[i]
        results = [None] * n
        results[n - 1] = partial
        for step in range(n - 1):  # and broadcast it on round the ring
            i = step % n
            with tf.device(devices[i]):
                results[i] = tf.identity(results[(i - 1) % n])
        return results
        """,
        check="3",
        expect=r"sends 256 bytes, 2\.00 times the tensor",
    ),
    Wrong(
        3,
        "reduce-scatter without the all-gather",
        """
        n, shape = len(devices), tensors[0].shape
        sizes = [len(c) for c in np.array_split(np.arange(shape.num_elements()), n)]
        chunks = []
        for device, t in zip(devices, tensors):
            with tf.device(device):
                chunks.append(tf.split(tf.reshape(t, [-1]), sizes))
        for step in range(n - 1):
            sent = [chunks[i][(i - step) % n] for i in range(n)]
            for i in range(n):
                with tf.device(devices[(i + 1) % n]):
                    c = (i - step) % n
                    chunks[(i + 1) % n][c] = chunks[(i + 1) % n][c] + sent[i]
        results = []
        for device, row in zip(devices, chunks):
            with tf.device(device):
                results.append(tf.reshape(tf.concat(row, 0), shape))
        return results
        """,
        check="3",
        expect=r"output 0 is not the sum",
    ),
    # found by a second pair of eyes
    Wrong(
        1,
        "pairs in the wrong order",
        "return [(pairs[0][1], tf.add_n([g for g, _ in pairs]) / len(pairs)) "
        "for pairs in zip(*tower_grads)]",
        check="1",
        expect=r"the second item of the pair for .* is a .*Tensor, not the variable itself",
    ),
    Wrong(
        1,
        "dpkit's average_gradients",
        """
        from dpkit import gradients as library

        return library.average_gradients(tower_grads)
        """,
        check="1",
        expect=r"your code calls dpkit's gradients.average_gradients",
    ),
    Wrong(
        2,
        "the learning rate scaled by N at every call",
        _TOWERS.format(loss=_GLOBAL, reduce="tf.add_n(list(g)) / len(g)").replace(
            "optimizer.apply_gradients(",
            "optimizer.learning_rate.assign(optimizer.learning_rate * NUM_DEVICES)\n"
            "optimizer.apply_gradients(",
        ),
        check="2",
        expect=r"after a second step, .* differs from two big-batch steps",
    ),
    Wrong(
        2,
        "each tower's gradients applied on their own",
        _TOWERS.format(loss=_GLOBAL, reduce="g").replace(
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "for g in tower_grads:\n"
            "    optimizer.apply_gradients(zip(g, model.trainable_variables))",
        ),
        check="2",
        expect=r"one call of your step made 4 optimizer updates",
    ),
    Wrong(
        3,
        "equal chunks",
        """
        n, shape = len(devices), tensors[0].shape
        chunks = []
        for device, t in zip(devices, tensors):
            with tf.device(device):
                chunks.append(tf.split(tf.reshape(t, [-1]), n))
        return [tf.reshape(tf.concat(row, 0), shape) for row in chunks]
        """,
        check="3",
        expect=r"for 35 elements on 4 devices ring_all_reduce raised InvalidArgumentError",
    ),
    Wrong(
        3,
        "summed in NumPy",
        """
        total = np.sum([t.numpy() for t in tensors], axis=0)
        results = []
        for device in devices:
            with tf.device(device):
                results.append(tf.constant(total))
        return results
        """,
        check="3",
        expect=r"cannot be traced as a graph .*: compute with TensorFlow ops",
    ),
    Wrong(
        3,
        "dpkit's ring_all_reduce",
        """
        from dpkit import gradients as library

        return library.ring_all_reduce(tensors, devices)
        """,
        check="3",
        expect=r"your code calls dpkit's gradients.ring_all_reduce",
    ),
]
