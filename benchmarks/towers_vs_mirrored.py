"""Throughput of dpkit towers against TensorFlow's own data parallelism, in one run.

    python benchmarks/towers_vs_mirrored.py [--devices 4] [--batch 256] [--model lenet5]

On the same logical devices and the same global batch it measures, in interleaved rounds
(so a busy machine slows every contender alike):

* single device: the whole batch through one plain tf.function step on device 0;
* dpkit towers: towers.make_tower_train_step, variables on the CPU;
* MirroredStrategy custom loop: strategy.run inside a tf.function;
* Keras fit under MirroredStrategy.

It prints examples/sec (median over rounds, with the spread) and each one's ratio to the
MirroredStrategy custom loop. Synthetic data from memory, so input never limits speed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256, help="global batch size")
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import keras
    import tensorflow as tf

    from dpkit import data, devices, models, towers

    setup = devices.setup(args.devices)
    devs = list(setup.devices)
    towers.shard_sizes(args.batch, len(devs))  # fail early, with the fix, if it does not divide
    keras.utils.set_random_seed(0)
    shape = (24, 24, 3) if args.model == "cifar10_cnn" else (28, 28, 1)
    x, y = next(iter(data.synthetic(shape, 10, batch_size=args.batch)))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def build():
        return models.build(args.model, input_shape=shape)

    # single device
    with tf.device(devs[0]):
        single = build()
    single_opt = keras.optimizers.SGD(0.01)

    @tf.function
    def single_step():
        with tf.device(devs[0]):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, single(x, training=True))
            grads = tape.gradient(loss, single.trainable_variables)
            single_opt.apply_gradients(zip(grads, single.trainable_variables))
        return loss

    # dpkit towers
    with towers.variables_on(devs, "cpu"):
        tower_model = build()
    tower_step = towers.make_tower_train_step(tower_model, keras.optimizers.SGD(0.01), devs)

    # MirroredStrategy: custom loop and Keras fit
    strategy = tf.distribute.MirroredStrategy(devs)
    with strategy.scope():
        mirrored = build()
        mirrored_opt = keras.optimizers.SGD(0.01)
        fitted = build()
        fitted.compile(optimizer=keras.optimizers.SGD(0.01), loss=loss_fn, jit_compile=False)
    dataset = tf.data.Dataset.from_tensors((x, y)).repeat()
    batches = iter(strategy.experimental_distribute_dataset(dataset))

    @tf.function
    def mirrored_step(batch):
        def replica(xr, yr):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(
                    per_example(yr, mirrored(xr, training=True)), global_batch_size=args.batch
                )
            grads = tape.gradient(loss, mirrored.trainable_variables)
            mirrored_opt.apply_gradients(zip(grads, mirrored.trainable_variables))
            return loss

        return strategy.run(replica, args=batch)

    def run_steps(fn, steps):
        for _ in range(steps):
            result = fn()
        # Wait for the last step: fetch a value that depends on it.
        tf.nest.map_structure(
            lambda t: t.numpy() if hasattr(t, "numpy") else t,
            strategy.experimental_local_results(result)
            if isinstance(result, tf.distribute.DistributedValues)
            else result,
        )

    contenders = {
        "single device": lambda n: run_steps(single_step, n),
        "dpkit towers": lambda n: run_steps(lambda: tower_step(x, y), n),
        "MirroredStrategy custom loop": lambda n: run_steps(
            lambda: mirrored_step(next(batches)), n
        ),
        "Keras fit + MirroredStrategy": lambda n: fitted.fit(
            dataset, steps_per_epoch=n, epochs=1, verbose=0
        ),
    }
    print(
        f"{args.model}, global batch {args.batch}, {len(devs)} {setup.device_type} devices "
        f"({setup.case}); {args.rounds} rounds of {args.steps} steps",
        flush=True,
    )
    for run in contenders.values():  # warm-up: tracing and first-step costs
        run(3)
    rates = {name: [] for name in contenders}
    for r in range(args.rounds):
        for name, run in contenders.items():
            start = time.perf_counter()
            run(args.steps)
            rates[name].append(args.steps * args.batch / (time.perf_counter() - start))
        print(f"  round {r + 1}/{args.rounds} done", flush=True)

    reference = statistics.median(rates["MirroredStrategy custom loop"])
    print(f"\n{'contender':30s} {'examples/sec':>13s} {'spread':>8s} {'vs MS loop':>10s}")
    for name, values in rates.items():
        median = statistics.median(values)
        spread = (max(values) - min(values)) / median
        print(f"{name:30s} {median:13,.0f} {spread:7.0%} {median / reference:9.2f}x")
    towers_rate = statistics.median(rates["dpkit towers"])
    fit_rate = statistics.median(rates["Keras fit + MirroredStrategy"])
    ratio = towers_rate / reference
    print(f"\ndpkit towers / MirroredStrategy custom loop: {ratio:.2f}x (target >= 1.25x)")
    ratio = towers_rate / fit_rate
    print(f"dpkit towers / Keras fit + MirroredStrategy: {ratio:.2f}x (target >= 1.00x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
