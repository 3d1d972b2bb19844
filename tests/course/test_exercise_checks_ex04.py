"""dpkit_checks.ex04's training-step check, in a fresh process with three logical CPUs
(MirroredStrategy over 1, 2 and 3 of them): a right step passes; wrong ones fail, each with
the message that names its mistake."""

from tests.support import childproc


def test_the_step_check_passes_the_right_step_and_names_wrong_ones():
    out = childproc.run(
        """
        import json
        import keras
        import tensorflow as tf
        from dpkit import devices
        from dpkit_checks import ex04

        setup = devices.setup(3)
        per_example_loss = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="none"
        )
        def global_mean(per_example, global_batch_size, l2_terms):
            return tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)

        def answer(
            loss=global_mean, l2=tf.nn.scale_regularization_loss, reduce="SUM", training=True
        ):
            def make_train_step(strategy, model, optimizer, global_batch_size):
                def replica_step(x, y):
                    with tf.GradientTape() as tape:
                        per_example = per_example_loss(y, model(x, training=training))
                        total = loss(per_example, global_batch_size, model.losses)
                        total += l2(model.losses)
                    grads = tape.gradient(total, model.trainable_variables)
                    optimizer.apply_gradients(zip(grads, model.trainable_variables))
                    return total

                @tf.function
                def train_step(x, y):
                    return strategy.reduce(reduce, strategy.run(replica_step, (x, y)), axis=None)

                return train_step

            return make_train_step

        def one_device(strategy, model, optimizer, global_batch_size):
            @tf.function
            def train_step(x, y):  # the replicas' shares gathered, one step outside strategy.run
                x = tf.concat(strategy.experimental_local_results(x), axis=0)
                y = tf.concat(strategy.experimental_local_results(y), axis=0)
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(per_example_loss(y, model(x))) + tf.add_n(model.losses)
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            return train_step

        def outcome(make_train_step):
            try:
                return "passed: " + ex04.check_train_step(make_train_step, setup.devices)
            except AssertionError as error:
                return str(error)

        print(json.dumps({
            "right": outcome(answer()),
            "reduce_mean": outcome(answer(loss=lambda p, g, r: tf.reduce_mean(p))),
            "l2 whole": outcome(answer(l2=tf.add_n)),
            "MEAN": outcome(answer(reduce="MEAN")),
            "no l2": outcome(answer(l2=lambda losses: 0.0)),
            "l2 per example": outcome(
                answer(loss=lambda p, g, r: global_mean(p + tf.add_n(r), g, r), l2=lambda r: 0.0)
            ),
            "one device": outcome(one_device),
            "no training flag": outcome(answer(training=None)),
        }))
        """
    )
    assert out["right"].startswith("passed: Check 2 passed"), out["right"]
    assert "2 replica(s) taking [2, 5]" in out["reduce_mean"]
    assert "each replica divided its loss by its own batch" in out["reduce_mean"]
    assert "the L2 terms counted 2.00 times, once per replica" in out["l2 whole"]
    assert "reduce them with SUM" in out["MEAN"]
    assert "1 replica(s)" in out["no l2"] and "the L2 terms did not move" in out["no l2"]
    assert "step 3 (the epoch's last batch, short" in out["l2 per example"]
    assert "add the L2 terms once, apart from them" in out["l2 per example"]
    assert "your step ran the model outside strategy.run" in out["one device"]
    assert "step 1, your step called the model with training=None" in out["no training flag"]
