"""The ``contender`` program: one contender of ``benchmarks/towers_vs_mirrored.py``.

``python -m dpkit.programs contender --strategy S --per-call K --devices N --batch B --model M
--steps T --rounds R`` sets up ``N`` devices, builds model ``M`` and a training step of
strategy ``S`` (``single``, ``towers`` or ``mirrored``: :func:`dpkit.programs.throughput.
make_step`; ``fit``: Keras ``fit`` under ``MirroredStrategy``) with ``K`` steps per call,
warms it up, and writes ``contract.ContenderReady``. Then each stdin line ``run`` times ``T``
steps and answers ``contract.Round``; ``quit`` (or the end of stdin) ends it.

Keras ``fit`` runs once for the whole benchmark, and a callback reads the clock at the end of
the warm-up and at each round's boundary, so ``fit``'s per-call set-up is never timed, as no
contender's set-up is. If ``fit`` fails before its first step, ``ContenderReady`` says why in
``failed``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import keras
import tensorflow as tf

from dpkit import data, devices, models
from dpkit.plumbing import contract, procs
from dpkit.programs import throughput

#: Calls before the first timed round (tracing and first-step costs).
WARMUP_CALLS = 3
STRATEGIES = ("single", "towers", "mirrored", "fit")


def _next_command() -> contract.Command:
    return contract.Command.parse(sys.stdin.readline())[0]


def main(argv: list[str]) -> int:
    """One contender; returns ``Exit.OK`` after ``quit``."""
    parser = argparse.ArgumentParser(prog="python -m dpkit.programs contender")
    parser.add_argument("--strategy", required=True, choices=STRATEGIES)
    parser.add_argument("--per-call", type=int, default=1, help="steps per tf.function call")
    parser.add_argument("--devices", type=int, required=True)
    parser.add_argument("--batch", type=int, required=True, help="global batch size")
    parser.add_argument("--model", required=True)
    parser.add_argument("--steps", type=int, required=True, help="timed steps per round")
    parser.add_argument("--rounds", type=int, required=True)
    args = parser.parse_args(argv)

    setup = devices.setup(args.devices)
    devs = list(setup.devices)
    keras.utils.set_random_seed(0)
    shape = models.INPUT_SHAPES[args.model]
    x, y = next(iter(data.synthetic(shape, 10, batch_size=args.batch)))
    dataset = tf.data.Dataset.from_tensors((x, y)).repeat()

    def build():
        return models.build(args.model, input_shape=shape)

    # The same warm-up in every child: a few single-device steps of a throwaway model.
    # A fresh process ran the MirroredStrategy loop up to 1.5x slower than one that had
    # trained any model before, so every contender starts from that same state.
    warm_step, _ = throughput.make_step("single", build, devs, dataset, global_batch=args.batch)
    for _ in range(3):
        float(warm_step())
    calls_per_round = args.steps // args.per_call
    ready = contract.ContenderReady(
        ready=args.strategy,
        tensorflow=tf.__version__,
        intra_op_threads=tf.config.threading.get_intra_op_parallelism_threads() or "default",
        inter_op_threads=tf.config.threading.get_inter_op_parallelism_threads() or "default",
        devices=devs,
        device_case=setup.case,
    )
    if args.strategy == "fit":
        return _fit(build, devs, dataset, args, calls_per_round, ready)

    options = {"global_batch": args.batch, "steps_per_call": args.per_call}
    step, _ = throughput.make_step(args.strategy, build, devs, dataset, **options)
    for _ in range(WARMUP_CALLS):
        float(step())  # tracing and first-step costs
    procs.record(ready)
    while _next_command() is contract.Command.RUN:
        start = time.perf_counter()
        for _ in range(calls_per_round):
            loss = step()
        float(loss)  # waits for the last step
        procs.record(contract.Round(seconds=time.perf_counter() - start))
    return contract.Exit.OK


def _fit(build, devs, dataset, args, calls_per_round: int, ready) -> int:
    """Keras ``fit`` under ``MirroredStrategy``, timed round by round from a callback."""
    strategy = tf.distribute.MirroredStrategy(devs)
    with strategy.scope():
        model = build()
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        options = {"steps_per_execution": args.per_call, "jit_compile": False}
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss=loss, **options)

    class RoundClock(keras.callbacks.Callback):
        """Reads the clock at the end of the warm-up and at every round's boundary."""

        def __init__(self):
            super().__init__()
            self.calls, self.start = 0, None

        def on_train_batch_end(self, batch, logs=None):
            self.calls += 1
            done = self.calls - WARMUP_CALLS
            if done < 0 or done % calls_per_round:
                return
            float(logs["loss"])  # waits for the last step
            if self.start is not None:
                procs.record(contract.Round(seconds=time.perf_counter() - self.start))
            else:
                procs.record(ready)
            if _next_command() is not contract.Command.RUN:
                self.model.stop_training = True
                return
            self.start = time.perf_counter()

    total_calls = WARMUP_CALLS + args.rounds * calls_per_round
    clock = RoundClock()
    try:
        model.fit(
            dataset, steps_per_epoch=total_calls * args.per_call, verbose=0, callbacks=[clock]
        )
    except Exception as error:  # noqa: BLE001 -- reported, not hidden
        if clock.start is not None:
            raise
        # Keras 3 fit with steps_per_execution > 1 under MirroredStrategy fails in
        # graph building (keras-team/keras#19246, open); say so instead of timing nothing
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        procs.record(dataclasses.replace(ready, failed=f"{type(error).__name__}: {first}"))
    return contract.Exit.OK
