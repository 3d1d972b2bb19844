"""Wrong answers for exercises/01_one_device.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "01_one_device.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "summed loss over the constant BATCH_SIZE"

# Exercise 3's answer, as the solution writes it, with the pieces the mistakes change.
_STEP = """
variables = model.trainable_variables
sums = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]

def step(x, y):
    {reset}
    n = len(x)
    for xi, yi in {split}:
        with tf.GradientTape() as tape:
            loss = {loss}
            loss += {penalty}
        for s, g in zip(sums, tape.gradient(loss, variables)):
            s.assign_add(g)
        {inside}
    {apply}

return step
"""
_PARTS = {
    "reset": "for s in sums:\n        s.assign(tf.zeros_like(s))",
    "split": "zip(np.array_split(x, micro_batches), np.array_split(y, micro_batches))",
    "loss": "tf.reduce_sum(per_example_loss(yi, model(xi, training=True))) / n",
    "penalty": "sum(model.losses) / micro_batches",
    "inside": "",
    "apply": "optimizer.apply_gradients(zip([s.read_value() for s in sums], variables))",
}


def _step(**changes) -> str:
    return _STEP.format(**{**_PARTS, **changes})


WRONG: list[Wrong] = [
    # 1. decayed_learning_rate
    Wrong(
        1,
        "staircase ignored",
        "return initial_rate * decay_rate ** (step / decay_steps)",
        check="1",
        expect=r"decayed_learning_rate\(1, \.\.\.\) .*staircase=True: .*yours decays smoothly",
    ),
    Wrong(
        1,
        "always in stairs",
        "return initial_rate * decay_rate ** (step // decay_steps)",
        check="1",
        expect=r"decayed_learning_rate\(1, \.\.\.\) with initial_rate=0\.1.*drops in stairs",
    ),
    Wrong(
        1,
        "stairs rounded to the nearest period",
        """
        periods = round(step / decay_steps) if staircase else step / decay_steps
        return initial_rate * decay_rate**periods
        """,
        check="1",
        expect=r"decayed_learning_rate\(63, .*rounds the exponent to the nearest",
    ),
    Wrong(
        1,
        "stairs rounded up",
        """
        periods = -(-step // decay_steps) if staircase else step / decay_steps
        return initial_rate * decay_rate**periods
        """,
        check="1",
        expect=r"rounds the exponent up",
    ),
    Wrong(
        1,
        "counts steps from 1",
        "return initial_rate * decay_rate ** ((step + 1) / decay_steps)",
        check="1",
        expect=r"decayed_learning_rate\(0, .*Keras's at the next step",
    ),
    Wrong(
        1,
        "decays by decay_rate every step",
        "return initial_rate * decay_rate**step",
        check="1",
        expect=r"decays by decay_rate every step",
    ),
    Wrong(
        1,
        "Keras's schedule instead of the formula",
        """
        schedule = keras.optimizers.schedules.ExponentialDecay(
            initial_rate, decay_steps, decay_rate, staircase=staircase
        )
        return float(schedule(step))
        """,
        check="1",
        expect=r"calls Keras's or TF1's exponential decay",
    ),
    Wrong(
        1,
        "the lesson's rate, not the arguments",
        "return LEARNING_RATE * 0.99 ** (step / 64)",
        check="1",
        expect=r"decayed_learning_rate\(0, .*yours is 1\.000000e-03, Keras's is 1\.000000e-01",
    ),
    Wrong(
        1,
        "the rate as text",
        "return str(initial_rate * decay_rate ** (step / decay_steps))",
        check="1",
        expect=r"yours returns str .*return one number",
    ),
    # red team, exercise 1
    Wrong(
        1,
        "inverse-time decay",
        "return initial_rate / (1 + decay_rate * step / decay_steps)",
        check="1",
        expect=r"decayed_learning_rate\(1, \.\.\.\) .*yours is 9\.904913e-02, Keras's is "
        r"9\.995919e-02",
    ),
    Wrong(
        1,
        "an array of one rate",
        "return np.array([initial_rate * decay_rate ** (step / decay_steps)])",
        check="1",
        expect=r"yours returns ndarray .*return one number",
    ),
    # fourth red team, exercise 1
    Wrong(
        1,
        "TF1's exponential_decay instead of the formula",
        """
        decay = tf.compat.v1.train.exponential_decay
        return float(decay(initial_rate, step, decay_steps, decay_rate, staircase=staircase)())
        """,
        check="1",
        expect=r"calls Keras's or TF1's exponential decay: compute the rate yourself",
    ),
    Wrong(
        1,
        "stairs counted from step 1",
        """
        periods = max(step - 1, 0) // decay_steps if staircase else step / decay_steps
        return initial_rate * decay_rate**periods
        """,
        check="1",
        expect=r"decayed_learning_rate\(64, .*staircase=True: yours is 1\.000000e-03, Keras's is "
        r"9\.900000e-04: yours is Keras's at the previous step",
    ),
    # 2. average_update
    Wrong(
        2,
        "the update count ignored",
        "return shadow - (1.0 - decay) * (shadow - value)",
        check="2",
        expect=r"num_updates=0\): yours keeps 0\.9900 .* TF keeps 0\.1000: with num_updates=0",
    ),
    Wrong(
        2,
        "no count taken as a count of 0",
        """
        decay = min(decay, (1.0 + (num_updates or 0)) / (10.0 + (num_updates or 0)))
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"average_update\(shadow, value, decay=0\.99\): .*without an update count",
    ),
    Wrong(
        2,
        "a count of 0 taken as no count",
        """
        if num_updates:
            decay = min(decay, (1.0 + num_updates) / (10.0 + num_updates))
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"num_updates=0\): yours keeps 0\.9900 of the old shadow, TF keeps 0\.1000",
    ),
    Wrong(
        2,
        "no cap at decay",
        """
        if num_updates is not None:
            decay = (1.0 + num_updates) / (10.0 + num_updates)
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"num_updates=1000\): yours keeps 0\.9911 .*never exceeds `decay`",
    ),
    Wrong(
        2,
        "max instead of min",
        """
        if num_updates is not None:
            decay = max(decay, (1.0 + num_updates) / (10.0 + num_updates))
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"num_updates=0\): yours keeps 0\.9900",
    ),
    Wrong(
        2,
        "shares of shadow and weight swapped",
        """
        if num_updates is not None:
            decay = min(decay, (1.0 + num_updates) / (10.0 + num_updates))
        return decay * value + (1.0 - decay) * shadow
        """,
        check="2",
        expect=r"shares of the old shadow and the weight are swapped",
    ),
    Wrong(
        2,
        "changes the shadow in place",
        """
        if num_updates is not None:
            decay = min(decay, (1.0 + num_updates) / (10.0 + num_updates))
        shadow -= (1.0 - decay) * (shadow - value)
        return shadow
        """,
        check="2",
        expect=r"changed an array passed in",
    ),
    Wrong(
        2,
        "TF's class instead of the formula",
        """
        weight = tf.Variable(shadow)
        count = None if num_updates is None else tf.Variable(num_updates, dtype=tf.int64)
        average = tf.train.ExponentialMovingAverage(decay, num_updates=count)
        average.apply([weight])
        weight.assign(value)
        average.apply([weight])
        return average.average(weight).numpy()
        """,
        check="2",
        expect=r"calls TF's ExponentialMovingAverage: write the update yourself",
    ),
    # red team, exercise 2
    Wrong(
        2,
        "only positive counts cap the decay",
        """
        if num_updates is not None and num_updates > 0:
            decay = min(decay, (1.0 + num_updates) / (10.0 + num_updates))
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"num_updates=0\): yours keeps 0\.9900 of the old shadow, TF keeps 0\.1000",
    ),
    Wrong(
        2,
        "a tensor, not an array",
        """
        if num_updates is not None:
            decay = min(decay, (1.0 + num_updates) / (10.0 + num_updates))
        return tf.constant(shadow - (1.0 - decay) * (shadow - value))
        """,
        check="2",
        expect=r"yours returns EagerTensor; return a NumPy array",
    ),
    # 3. make_accumulating_step
    Wrong(
        3,
        "summed loss over the constant BATCH_SIZE",
        _step(loss="tf.reduce_sum(per_example_loss(yi, model(xi, training=True))) / BATCH_SIZE"),
        check="3",
        expect=r"SGD, 1 micro-batch, .* step 1 on a batch of 10: .*divides each example's loss "
        r"by 64; the batch holds 10 examples",
    ),
    Wrong(
        3,
        "mean of the micro-batch means",
        _step(
            loss="tf.reduce_mean(per_example_loss(yi, model(xi, training=True))) / micro_batches"
        ),
        check="3",
        expect=r"SGD, 2 micro-batches, .* step 2 on a batch of 9 \(tensors\): .*weighs the "
        r"examples unequally",
    ),
    Wrong(
        3,
        "micro-batch means summed, unscaled",
        _step(loss="tf.reduce_mean(per_example_loss(yi, model(xi, training=True)))"),
        check="3",
        expect=r"SGD, 2 micro-batches, .* step 1 on a batch of 10: .*divides each example's loss "
        r"by 5; .* 2 times the mean loss's",
    ),
    Wrong(
        3,
        "applies after every micro-batch",
        _step(
            inside="optimizer.apply_gradients(zip([s.read_value() for s in sums], variables))\n"
            "        for s in sums:\n            s.assign(tf.zeros_like(s))",
            apply="",
        ),
        check="3",
        expect=r"SGD, 2 micro-batches.*step 1 .*the optimizer has made 2 updates",
    ),
    Wrong(
        3,
        "sums never set back to zero",
        _step(reset="pass"),
        check="3",
        expect=r"SGD, 1 micro-batch, .* step 2 on a batch of 7 \(tensors\): .*plus the previous "
        r"step's",
    ),
    Wrong(
        3,
        "regularisation left out",
        _step(penalty="0.0"),
        check="3",
        expect=r"counts the regularisation loss \(model\.losses\) 0 times",
    ),
    Wrong(
        3,
        "regularisation once per micro-batch",
        _step(penalty="sum(model.losses)"),
        check="3",
        expect=r"SGD, 2 micro-batches.*counts the regularisation loss \(model\.losses\) 2 times",
    ),
    Wrong(
        3,
        "no micro-batches, one big batch",
        _step(split="[(x, y)]"),
        check="3",
        expect=r"ran the model on the whole batch of 10 at once",
    ),
    Wrong(
        3,
        "Keras's train_on_batch",
        """
        model.compile(optimizer=optimizer, loss=per_example_loss)

        def step(x, y):
            model.train_on_batch(x, y)

        return step
        """,
        check="3",
        expect=r"calls Keras's own training loop",
    ),
    Wrong(
        3,
        "dpkit's tower_gradients over one CPU",
        """
        from dpkit import towers

        variables = model.trainable_variables

        def mean_loss(labels, logits):
            return tf.reduce_mean(per_example_loss(labels, logits))

        def step(x, y):
            cpus = ["/cpu:0"] * micro_batches
            grads, _, shares, _ = towers.tower_gradients(
                model, mean_loss, x, y, cpus, weighted=True
            )
            total = [sum(w * g[i] for w, g in zip(shares, grads)) for i in range(len(variables))]
            optimizer.apply_gradients(zip(total, variables))

        return step
        """,
        check="3",
        expect=r"calls dpkit's towers\.tower_gradients",
    ),
    # red team, exercise 3
    Wrong(
        3,
        "tf.add_n of the regularisation losses",
        _step(penalty="tf.add_n(model.losses) / micro_batches"),
        check="3",
        expect=r"no regularisation, step 1 on a batch of 12: yours raised ValueError",
    ),
    Wrong(
        3,
        "tf.split into equal parts",
        _step(split="zip(tf.split(x, micro_batches), tf.split(y, micro_batches))"),
        check="3",
        expect=r"step 2 on a batch of 9 \(tensors\): yours raised InvalidArgumentError",
    ),
    Wrong(
        3,
        "micro-batches of n // k, the rest dropped",
        _step(
            split="((x[i * m:(i + 1) * m], y[i * m:(i + 1) * m]) for i in range(micro_batches))"
        ).replace("n = len(x)", "n = len(x)\n    m = n // micro_batches"),
        check="3",
        expect=r"ran the model on batches of \[4, 4\]; split the 9 examples into 2",
    ),
    Wrong(
        3,
        "compute_average_loss without the global batch",
        _step(loss="tf.nn.compute_average_loss(per_example_loss(yi, model(xi, training=True)))"),
        check="3",
        expect=r"divides each example's loss by 5; .* 2 times the mean loss's",
    ),
    Wrong(
        3,
        "regularisation read outside the tape",
        _step(penalty="0.0").replace("n = len(x)", "n = len(x)\n    penalty = sum(model.losses)"),
        check="3",
        expect=r"counts the regularisation loss \(model\.losses\) 0 times",
    ),
    Wrong(
        3,
        "the summed gradients clipped",
        _step(
            apply="optimizer.apply_gradients(zip(tf.clip_by_global_norm("
            "[s.read_value() for s in sums], 5.0)[0], variables))"
        ),
        check="3",
        expect=r"3 micro-batches, .*large gradients, step 1 .*: your step is 0\.0\d+ times one "
        r"step on the whole batch, in the same direction: do you scale or clip",
    ),
    Wrong(
        3,
        "variables and gradients swapped",
        _step(apply="optimizer.apply_gradients(zip(variables, sums))"),
        check="3",
        expect=r"did not change the weights: does apply_gradients get \(gradient, variable\) pairs",
    ),
    Wrong(
        3,
        "the notebook's MICRO_BATCHES, not the argument",
        _step(split="zip(np.array_split(x, MICRO_BATCHES), np.array_split(y, MICRO_BATCHES))"),
        check="3",
        expect=r"1 micro-batch, .*ran the model on batches of \[3, 3, 2, 2\]; split the 10 "
        r"examples into 1 micro-batch",
    ),
    # fourth red team, exercise 3
    Wrong(
        3,
        "the model run without training=True",
        _step(loss="tf.reduce_sum(per_example_loss(yi, model(xi))) / n"),
        check="3",
        expect=r"SGD, 1 micro-batch, .*step 1 on a batch of 10: your step ran the model with "
        r"training=None: pass training=True",
    ),
    Wrong(
        3,
        "micro-batches of ceil(n / k) examples",
        _step(split="((x[i:i + m], y[i:i + m]) for i in range(0, n, m))").replace(
            "n = len(x)", "n = len(x)\n    m = int(np.ceil(n / micro_batches))"
        ),
        check="3",
        expect=r"Adam, 3 micro-batches, .*step 2 on a batch of 4 \(tensors\): your step ran the "
        r"model on batches of \[2, 2\]; split the 4 examples into 3",
    ),
    Wrong(
        3,
        "micro-batches of n // k examples, the rest in one more",
        _step(split="((x[i:i + m], y[i:i + m]) for i in range(0, n, m))").replace(
            "n = len(x)", "n = len(x)\n    m = max(n // micro_batches, 1)"
        ),
        check="3",
        expect=r"SGD, 2 micro-batches, .*step 2 on a batch of 9 \(tensors\): your step ran the "
        r"model on batches of \[4, 4, 1\]",
    ),
]
