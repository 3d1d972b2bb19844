"""Runs in a child process with n devices: dpkit towers against independent references.

Each comparison in the returned dict is ``checking.agree`` of the result with a
reference, as ``{"ok", "says", "ratio"}`` (or a boolean for placement).
test_towers_reference.py asserts on them, one child per device count.
"""

from __future__ import annotations

import numpy as np

from dpkit import checking


def _gap(a, b, ulps: float = checking.DEFAULT_ULPS) -> dict:
    """checking.agree of two lists of arrays, as JSON: the verdict and what it says."""
    check = checking.agree([np.asarray(p) for p in a], [np.asarray(q) for q in b], ulps=ulps)
    return {
        "ok": bool(check),
        "says": str(check),
        "ratio": check.gap / check.bar if check.bar else None,
    }


def _bn_model():
    import keras
    from keras import layers

    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            layers.Conv2D(8, 3, name="conv"),
            layers.BatchNormalization(name="bn"),
            layers.ReLU(),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10, name="logits"),
        ]
    )


def measure(n: int, batch: int = 24, steps: int = 3, lr: float = 0.1) -> dict:
    import keras
    import tensorflow as tf

    from dpkit import compat, devices, gradients, models, towers

    setup = devices.setup(n)
    devs = list(setup.devices)
    keras.utils.set_random_seed(0)
    tf.config.experimental.enable_op_determinism()
    rng = np.random.default_rng(0)
    x = rng.random((batch, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    out = {"num_devices": len(devs)}

    def big_batch_run(build, weights, xb=x, yb=y, steps=steps):
        """Reference: the plain single-device step on the whole batch."""
        model = build()
        model.set_weights(weights)
        opt = keras.optimizers.SGD(lr)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, model(xb, training=True))
            opt.apply_gradients(
                zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            )

        for _ in range(steps):
            step()
        return model

    # One strategy per process: a second MirroredStrategy's collective ops collide with
    # the first's ("Shape mismatch in the collective instance").
    strategy = tf.distribute.MirroredStrategy(devs)

    def mirrored_run(build, weights):
        """Reference: MirroredStrategy custom loop on the same devices."""
        with strategy.scope():
            model = build()
            model.set_weights(weights)
            opt = keras.optimizers.SGD(lr)

        @tf.function
        def step(batch_in):
            def replica(xr, yr):
                with tf.GradientTape() as tape:
                    loss = tf.nn.compute_average_loss(
                        per_example(yr, model(xr, training=True)), global_batch_size=batch
                    )
                opt.apply_gradients(
                    zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
                )

            strategy.run(replica, args=batch_in)

        data = tf.data.Dataset.from_tensors((x, y)).repeat(steps)
        for batch_in in strategy.experimental_distribute_dataset(data):
            step(batch_in)
        return model

    # 1. Averaged tower gradients vs the whole batch's gradient.
    with towers.variables_on(devs, "cpu"):
        model = models.lenet5()
    start = model.get_weights()
    tower_grads, _, weights, _ = towers.tower_gradients(model, loss_fn, x, y, devs)
    averaged = gradients.average_gradients(tower_grads, weights)
    with tf.GradientTape() as tape:
        whole = loss_fn(y, model(x, training=True))
    out["gradient_vs_big_batch"] = _gap(averaged, tape.gradient(whole, model.trainable_variables))

    # 2-4. K SGD steps: towers vs big batch, vs MirroredStrategy, vs the TF1 trainer.
    step = towers.make_tower_train_step(model, keras.optimizers.SGD(lr), devs)
    for _ in range(steps):
        step(x, y)
    trained = model.get_weights()
    out["weights_vs_big_batch"] = _gap(trained, big_batch_run(models.lenet5, start).get_weights())
    out["weights_vs_mirrored"] = _gap(trained, mirrored_run(models.lenet5, start).get_weights())
    with compat.TowerTrainer(devs, batch, initial_weights=start, learning_rate=lr) as tf1:
        for _ in range(steps):
            tf1.step(x, y)
        out["weights_vs_tf1"] = _gap(trained, tf1.weights())

    # Each tower's convolution runs on its own device.
    graph = step.get_concrete_function(x, y).graph
    conv = {
        op.name.split("/")[0]: op.device
        for op in graph.get_operations()
        if op.type == "Conv2D" and op.name.startswith("tower_")
    }
    out["towers_on_their_devices"] = all(
        tf.DeviceSpec.from_string(conv[f"tower_{i}"]).device_index
        == tf.DeviceSpec.from_string(d).device_index
        for i, d in enumerate(devs)
    )

    # 5. Batch normalisation. Each tower normalises its shard by the shard's statistics
    # (as MirroredStrategy's replicas do), so after the first step the weights leave the
    # big batch's path; compare them with MirroredStrategy. Moving statistics:
    # MirroredStrategy keeps one copy per replica, each updated from its own shard only
    # (Keras 3 makes them with aggregation="none"); the towers average the updates, so they
    # equal the mean of MirroredStrategy's copies, and after one step the moving mean equals
    # the big batch's.
    with towers.variables_on(devs, "cpu"):
        bn = _bn_model()
    bn_start = bn.get_weights()
    bn_step = towers.make_tower_train_step(bn, keras.optimizers.SGD(lr), devs)
    bn_step(x, y)
    big_bn = big_batch_run(_bn_model, bn_start, steps=1)
    out["batchnorm_moving_mean_vs_big_batch"] = _gap(
        [bn.get_layer("bn").moving_mean.numpy()], [big_bn.get_layer("bn").moving_mean.numpy()]
    )
    for _ in range(steps - 1):
        bn_step(x, y)
    mirrored_bn = mirrored_run(_bn_model, bn_start)
    out["batchnorm_weights_vs_mirrored"] = _gap(
        [v.numpy() for v in bn.trainable_variables],
        [v.numpy() for v in mirrored_bn.trainable_variables],
    )
    replica_means = [
        np.mean([t.numpy() for t in v.value.values], axis=0)
        for v in mirrored_bn.non_trainable_variables
    ]
    out["batchnorm_statistics_vs_mirrored_replica_mean"] = _gap(
        [v.numpy() for v in bn.non_trainable_variables], replica_means
    )

    # 6. An uneven batch, weighted by shard size, vs the whole batch's gradient.
    xu, yu = x[: batch - 1], y[: batch - 1]
    tower_grads, _, weights, _ = towers.tower_gradients(model, loss_fn, xu, yu, devs, weighted=True)
    with tf.GradientTape() as tape:
        whole = loss_fn(yu, model(xu, training=True))
    out["weighted_vs_big_batch"] = _gap(
        gradients.average_gradients(tower_grads, weights),
        tape.gradient(whole, model.trainable_variables),
    )

    # 7. Variables on device 0 instead of the CPU.
    with towers.variables_on(devs, "device0"):
        on_first = models.lenet5()
    on_first.set_weights(start)
    step0 = towers.make_tower_train_step(
        on_first, keras.optimizers.SGD(lr), devs, where_variables="device0"
    )
    for _ in range(steps):
        step0(x, y)
    out["device0_vs_big_batch"] = _gap(
        on_first.get_weights(), big_batch_run(models.lenet5, start).get_weights()
    )

    # 8. The ring all-reduce vs tf.add_n, and where its results live.
    tensors = [tf.constant(rng.normal(size=(7, 5)), tf.float32) for _ in devs]
    ring = gradients.ring_all_reduce(tensors, devs)
    out["ring_vs_add_n"] = _gap([t.numpy() for t in ring], [tf.add_n(tensors).numpy()] * n)
    out["ring_results_on_their_devices"] = all(
        r.device.endswith(d.split("device:")[-1]) for r, d in zip(ring, devs)
    )

    # 9. make_parallel vs the model on the whole batch.
    pieces = towers.make_parallel(lambda images: model(images, training=False), devs, images=x)
    out["make_parallel_vs_whole"] = _gap([pieces.numpy()], [model(x, training=False).numpy()])
    return out
