"""Wrong answers for exercises/01_one_device.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "01_one_device.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "constant decay, no update count"

WRONG: list[Wrong] = [
    # 1. decayed_learning_rate
    Wrong(
        1,
        "staircase decay",
        "return LEARNING_RATE * LR_DECAY ** (step // DECAY_STEPS)",
        check="1",
        expect=r"step 32: yours 1\.000e-03 drops in steps",
    ),
    Wrong(
        1,
        "decays by LR_DECAY every step",
        "return LEARNING_RATE * LR_DECAY**step",
        check="1",
        expect=r"over the first 64 steps .* shrinks by a factor 0\.5256",
    ),
    Wrong(
        1,
        "counts steps from 1",
        "return LEARNING_RATE * LR_DECAY ** ((step + 1) / DECAY_STEPS)",
        check="1",
        expect=r"Keras's at the next step",
    ),
    Wrong(
        1,
        "linear decay",
        "return LEARNING_RATE * (1 - (1 - LR_DECAY) * step / DECAY_STEPS)",
        check="1",
        expect=r"exponential decay shrinks by the same factor at every step",
    ),
    Wrong(
        1,
        "Keras's schedule instead of the formula",
        """
        schedule = keras.optimizers.schedules.ExponentialDecay(LEARNING_RATE, DECAY_STEPS, LR_DECAY)
        return float(schedule(step))
        """,
        check="1",
        expect=r"calls Keras's ExponentialDecay",
    ),
    Wrong(
        1,
        "no decay at all",
        "return LEARNING_RATE",
        check="1",
        expect=r"it does not decay",
    ),
    Wrong(
        1,
        "the rate as text",
        "return str(LEARNING_RATE * LR_DECAY ** (step / DECAY_STEPS))",
        check="1",
        expect=r"step 0: yours returns a value of type str; return a number",
    ),
    Wrong(
        1,
        "a TensorFlow tensor",
        """
        exponent = tf.cast(step, tf.float32) / DECAY_STEPS
        return tf.constant(LEARNING_RATE) * tf.pow(tf.constant(LR_DECAY), exponent)
        """,
        check="1",
        expect=r"step 0: yours returns a value of type EagerTensor; return a number",
    ),
    # 2. average_update
    Wrong(
        2,
        "constant decay, no update count",
        "return shadow - (1.0 - EMA_DECAY) * (shadow - value)",
        check="2",
        expect=r"update 1: yours keeps 0\.9900 of the old shadow, TF keeps 0\.1818",
    ),
    Wrong(
        2,
        "max instead of min",
        """
        decay = max(EMA_DECAY, (1.0 + step) / (10.0 + step))
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"update 1: yours keeps 0\.9900",
    ),
    Wrong(
        2,
        "no cap at EMA_DECAY",
        """
        decay = (1.0 + step) / (10.0 + step)
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"update 1000: yours keeps 0\.9911 of the old shadow, TF keeps 0\.9900",
    ),
    Wrong(
        2,
        "shares of shadow and weight swapped",
        """
        decay = min(EMA_DECAY, (1.0 + step) / (10.0 + step))
        return decay * value + (1.0 - decay) * shadow
        """,
        check="2",
        expect=r"update 1: yours keeps 0\.8182 of the old shadow, TF keeps 0\.1818",
    ),
    Wrong(
        2,
        "moves away from the weight",
        """
        decay = min(EMA_DECAY, (1.0 + step) / (10.0 + step))
        return shadow - (1.0 - decay) * (value - shadow)
        """,
        check="2",
        expect=r"update 1: yours moves the shadow away from the weight",
    ),
    Wrong(
        2,
        "update count one behind",
        """
        decay = min(EMA_DECAY, step / (9.0 + step))
        return shadow - (1.0 - decay) * (shadow - value)
        """,
        check="2",
        expect=r"update 1: yours keeps 0\.1000 of the old shadow, TF keeps 0\.1818",
    ),
    Wrong(
        2,
        "changes the shadow in place",
        """
        decay = min(EMA_DECAY, (1.0 + step) / (10.0 + step))
        shadow -= (1.0 - decay) * (shadow - value)
        return shadow
        """,
        check="2",
        expect=r"changed an array passed in",
    ),
    Wrong(
        2,
        "a list, not an array",
        """
        decay = min(EMA_DECAY, (1.0 + step) / (10.0 + step))
        return list(shadow - (1.0 - decay) * (shadow - value))
        """,
        check="2",
        expect=r"update 1: yours returns a value of type list; return a NumPy array",
    ),
    # 3. train_step
    Wrong(
        3,
        "differentiates the sum of the losses",
        """
        with tf.GradientTape() as tape:
            per_example = keras.losses.sparse_categorical_crossentropy(
                y, model(x, training=True), from_logits=True
            )
            total = tf.reduce_sum(per_example)
        grads = tape.gradient(total, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return tf.reduce_mean(per_example)
        """,
        check="3",
        expect=r"step 1: your SGD step moved the weights 64 times as far",
    ),
    Wrong(
        3,
        "divides the mean loss by the batch again",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)) / BATCH_SIZE
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"step 1: you return 0\.03\d+, 0\.0156 times Keras's",
    ),
    Wrong(
        3,
        "never applies the gradients",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape.gradient(loss, model.trainable_variables)
        return loss
        """,
        check="3",
        expect=r"step 1: your step did not change the weights",
    ),
    Wrong(
        3,
        "returns the loss after the update",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss_fn(y, model(x, training=True))
        """,
        check="3",
        expect=r"step 1: you return .* the batch's loss after the update",
    ),
    Wrong(
        3,
        "forward pass outside the tape",
        """
        logits = model(x, training=True)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"step 1: your step raised ValueError: No gradients.*recorded nothing",
    ),
    Wrong(
        3,
        "gradients negated",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip([-g for g in grads], model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"step 1: your SGD step moved the weights the opposite way",
    ),
    Wrong(
        3,
        "applies the gradients twice",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"after 1 step\(s\) the optimizer has made 2 updates; make one per step",
    ),
    Wrong(
        3,
        "Keras's train_on_batch",
        """
        model.compile(optimizer=optimizer, loss=loss_fn)
        return model.train_on_batch(x, y)
        """,
        check="3",
        expect=r"calls Keras's own training loop",
    ),
    Wrong(
        3,
        "returns the per-example losses",
        """
        with tf.GradientTape() as tape:
            loss = keras.losses.sparse_categorical_crossentropy(
                y, model(x, training=True), from_logits=True
            )
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"step 1: your step returned an array of shape \(64,\), not the batch's mean loss",
    ),
    Wrong(
        3,
        "returns nothing",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """,
        check="3",
        expect=r"step 1: your step returned None, not the batch's mean loss",
    ),
    Wrong(
        3,
        "clips the gradients' global norm",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 5.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"step 4 \(from weights 3 times as large, gradients of global norm \d+\): your SGD "
        r"step moved the weights 0\.\d+ times as far as Keras's, in the same direction: your "
        r"step shrinks large gradients as a whole \(clipping their norm\?\)",
    ),
    Wrong(
        3,
        "clips each gradient at 1",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        grads = [tf.clip_by_norm(g, 1.0) for g in grads]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"step 4 \(from weights 3 times as large, .*\): your SGD step points another way "
        r"than Keras's \(cosine 0\.\d+\) .*\(clipping each one\?\)",
    ),
    Wrong(
        3,
        "clips each gradient at 0.5",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        grads = [tf.clip_by_norm(g, 0.5) for g in grads]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        # the gradients of the first steps are near 0.5: caught there or at the large step
        expect=r"points another way than Keras's|differs from Keras's in direction|"
        r"differently from Keras's \(in direction or size\)",
    ),
    Wrong(
        3,
        "trains the last layer only",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        last = model.trainable_variables[-2:]
        optimizer.apply_gradients(zip(tape.gradient(loss, last), last))
        return loss
        """,
        check="3",
        expect=r"step 1: your step left lenet5/conv1/kernel, .*lenet5/fc1/bias unchanged",
    ),
    Wrong(
        3,
        "softmax before a from-logits loss",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, tf.nn.softmax(model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="3",
        expect=r"step 1: you return \d\.\d+, (not|\d\.\d+ times) Keras's \d\.\d+, the batch's mean "
        r"cross-entropy at the same weights",
    ),
    Wrong(
        3,
        "plain SGD by hand, whatever the optimizer",
        """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(optimizer.learning_rate * grad)
        optimizer.iterations.assign_add(1)
        return loss
        """,
        check="3",
        expect=r"Adam step 2: you return .*, the loss at your weights, but Keras's twin is at .*: "
        r"your earlier steps moved the weights differently",
    ),
]
