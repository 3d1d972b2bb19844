"""The ``throughput`` program: one run of :class:`dpkit.report.Config`, in a child of its own.

Started by :func:`dpkit.bench.run` and :class:`dpkit.bench.Sweep` (lesson 05) as
``python -m dpkit.programs throughput --config JSON``. It sets up the devices, builds the
model and a training step (:func:`make_step`), trains, and writes the records of
:mod:`dpkit.plumbing.contract`: ``ThroughputReady`` (devices set up, model built),
``ThroughputPeak`` (the matmul peak of :func:`matmul_peak`, if asked for), one
``ThroughputWindow`` per measurement window of :class:`dpkit.meter.ThroughputMeter`, and its
``ThroughputSummary`` at the end. Exit code ``Exit.OK`` after the summary; ``Exit.DIVERGED``
if the loss stopped being finite.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time

import keras
import tensorflow as tf

from dpkit import data, devices, meter, models, report, towers
from dpkit.plumbing import checks, contract, procs


def matmul_peak(device: str, size: int | None = None, seconds: float = 1.0) -> float:
    """FLOP/s of repeated square float32 matmuls on ``device`` (best of a few rounds).

    A large matmul is about the fastest work a device does, so it stands for the peak
    that model FLOPs utilisation is measured against.
    """
    size = size or (4096 if "GPU" in device.upper() else 1024)
    with tf.device(device):
        a = tf.random.stateless_uniform((size, size), seed=(1, 2))
        b = tf.random.stateless_uniform((size, size), seed=(3, 4))

        @tf.function
        def chain(a, b):
            c = a
            for _ in range(8):
                c = tf.matmul(c, b) * (1.0 / size)
            return tf.reduce_sum(c)

        float(chain(a, b))  # trace and warm up
        best, start_all = 0.0, time.perf_counter()
        while True:
            start = time.perf_counter()
            float(chain(a, b))
            best = max(best, 8 * 2 * size**3 / (time.perf_counter() - start))
            if time.perf_counter() - start_all > seconds:
                return best


def make_step(strategy, build, devices, dataset, *, global_batch, lr=0.01, steps_per_call=1):
    """Build a model (``build()``, under the right device or strategy scope) and one SGD
    training step for ``strategy`` on ``devices``; return ``(step, model)``.

    ``strategy`` is ``"single"`` (:func:`dpkit.models.make_train_step` on ``devices[0]``),
    ``"towers"`` (:func:`dpkit.towers.make_tower_train_step`, variables on the CPU) or
    ``"mirrored"`` (:func:`dpkit.towers.make_mirrored_train_step`, ``MirroredStrategy``);
    ``dataset`` is an endless ``tf.data.Dataset`` of global batches ``(x, y)``. ``step()``
    trains on the next ``steps_per_call`` batches and returns the last step's loss. Above 1
    the steps run in a ``tf.range`` loop inside one ``tf.function`` that reads its batches
    from the iterator itself (the idea behind Keras' ``steps_per_execution``), so Python
    dispatches one call per ``steps_per_call`` steps.
    """
    checks.whole(steps_per_call, "steps_per_call", 1, "e.g. steps_per_call=10")
    checks.one_of(strategy, report.STRATEGIES, "strategy")
    devs = list(devices)
    if strategy == "single":
        with tf.device(devs[0]):
            model = build()
        step = models.make_train_step(model, keras.optimizers.SGD(lr), devs[0])
    elif strategy == "towers":
        with towers.variables_on(devs, "cpu"):
            model = build()
        step = towers.make_tower_train_step(model, keras.optimizers.SGD(lr), devs)
    else:
        mirrored = tf.distribute.MirroredStrategy(devs)
        with mirrored.scope():
            model = build()
            optimizer = keras.optimizers.SGD(lr)
        step = towers.make_mirrored_train_step(model, optimizer, mirrored, global_batch)
        dataset = mirrored.experimental_distribute_dataset(dataset)
    batches = iter(dataset)
    if steps_per_call == 1:
        return (lambda: step(*next(batches))), model

    @tf.function
    def several(iterator):  # the steps in a tf.range loop: one Python call for all of them
        for _ in tf.range(steps_per_call - 1):
            step(*next(iterator))
        return step(*next(iterator))

    return (lambda: several(batches)), model


def run(config: report.Config) -> int:
    """Train ``config`` and write its records; return the exit code."""
    setup = devices.setup(config.devices)
    devs = list(setup.devices)
    keras.utils.set_random_seed(config.seed)
    batch = config.global_batch
    if config.dataset == "synthetic":
        shape = models.INPUT_SHAPES[config.model]
        dataset = data.synthetic(shape, 10, batch_size=batch, seed=config.seed)
    else:
        arrays = data.load(config.dataset, seed=config.seed, download=False)
        x, y = arrays.x_train, arrays.y_train
        shape = tuple(x.shape[1:])
        dataset = data.make_dataset(x, y, batch, seed=config.seed, repeat=True)

    build = functools.partial(models.build, config.model, input_shape=shape)
    step, model = make_step(config.strategy, build, devs, dataset, global_batch=batch)

    flops = models.flops_per_example(model, training=True)
    ready = {"num_devices": setup.num_devices, "device_names": devs, "device_case": setup.case}
    ready |= {"physical_devices": len(setup.physical), "flops_per_example": flops}
    procs.record(contract.ThroughputReady(**ready))
    if config.measure_peak:
        procs.record(contract.ThroughputPeak(flops_per_sec=matmul_peak(devs[0])))
    m = meter.ThroughputMeter(
        batch, warmup_steps=config.warmup_steps, window_steps=config.window_steps
    )
    m.start()
    for _ in range(config.steps):
        loss = float(step())  # reading the loss waits for the step to finish
        if not math.isfinite(loss):
            print(
                f"the loss became {loss}; throughput of a diverged run means nothing.",
                file=sys.stderr,
            )
            return contract.Exit.DIVERGED
        window = m.tick()
        if window is not None:
            rate, per_step = window.examples_per_sec, window.sec_per_step
            done = {"index": window.index, "step": m.steps, "of_steps": config.steps, "loss": loss}
            procs.record(
                contract.ThroughputWindow(examples_per_sec=rate, sec_per_step=per_step, **done)
            )
    procs.record(contract.ThroughputSummary(**m.summary().as_dict()))
    return contract.Exit.OK


def main(argv: list[str]) -> int:
    """``throughput --config JSON``: run the :class:`dpkit.report.Config` given as JSON."""
    parser = argparse.ArgumentParser(prog="python -m dpkit.programs throughput")
    parser.add_argument("--config", required=True, help="the report.Config as JSON")
    return run(report.Config.from_dict(json.loads(parser.parse_args(argv).config)))
