"""Wrong answers for exercises/03_gradient_averaging.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "03_gradient_averaging.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "no towers, one big batch"

# One tower's loop, as the solution writes it, for the answers to exercise 2.
_TOWERS = """
tower_grads = []
shards = zip(tf.split(x, NUM_DEVICES), tf.split(y, NUM_DEVICES))
for device, (xi, yi) in zip(setup.devices, shards):
    with tf.device(device):
        with tf.GradientTape() as tape:
            per_example = per_example_loss(yi, model(xi, training=True))
            loss = {loss}
        tower_grads.append(tape.gradient(loss, model.trainable_variables))
grads = [{reduce} for g in zip(*tower_grads)]
optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""
_GLOBAL = "tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH_SIZE)"

WRONG: list[Wrong] = [
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
        "backward passes outside the towers' devices",
        _TOWERS.format(loss=_GLOBAL, reduce="tf.add_n(list(g))").replace(
            "    with tf.device(device):\n"
            "        with tf.GradientTape() as tape:\n"
            "            per_example = per_example_loss(yi, model(xi, training=True))\n"
            f"            loss = {_GLOBAL}\n"
            "        tower_grads",
            "    with tf.device(device), tf.GradientTape() as tape:\n"
            "        per_example = per_example_loss(yi, model(xi, training=True))\n"
            f"        loss = {_GLOBAL}\n"
            "    tower_grads",
        ),
        check="2",
        expect=r"tower 1 ran forward on \('CPU', 1\), but its backward pass ran on \('CPU', 0\)",
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
]
