"""A stand-in for the ``throughput`` program, without TensorFlow, for tests of what drives it.

The widget tests check the panel and the live view (rendered, updated in place, stopped),
not the training: a real child costs about 9 CPU-seconds to import TensorFlow and build a
model, this one a fraction of a second. It reads the same ``--config`` JSON and writes the
same contract records in the same order (ready, peak when asked, one window per window,
the summary), with the device count it was given, so a test still sees that the picker's
count reached the child. The real program against the same runner: tests/process/test_bench.py.

Use: ``monkeypatch.setattr(procs, "program_argv", standin_throughput.program_argv)``.
"""

from __future__ import annotations

import json
import sys
import time

from dpkit.plumbing import contract

WINDOW_SECONDS = 0.05  # each window "trains" this long, so a view has updates to show


def program_argv(program: str, *args) -> list[str]:
    """In place of ``procs.program_argv``: this script for ``throughput``, nothing else."""
    if program != contract.Program.THROUGHPUT:
        raise AssertionError(f"the stand-in runs only the throughput program, not {program!r}")
    return [sys.executable, __file__, *map(str, args)]


def main(argv: list[str]) -> int:
    from dpkit.plumbing import procs
    from dpkit.report import Config

    assert argv[0] == "--config", argv
    config = Config.from_dict(json.loads(argv[1]))
    n = config.devices
    names = [f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(n)]
    ready = dict(num_devices=n, device_names=names, device_case="standin", physical_devices=1)
    procs.record(contract.ThroughputReady(flops_per_example=1000, **ready))
    if config.measure_peak:
        procs.record(contract.ThroughputPeak(flops_per_sec=1e9))
    rate = 1000.0 * n
    for index in range(config.windows):
        time.sleep(WINDOW_SECONDS)
        step = config.warmup_steps + (index + 1) * config.window_steps
        window = dict(index=index, step=step, of_steps=config.steps, loss=1.0)
        window |= dict(examples_per_sec=rate, sec_per_step=config.global_batch / rate)
        procs.record(contract.ThroughputWindow(**window))
    summary = dict(examples_per_sec=rate, mean_examples_per_sec=rate, spread=0.0)
    summary |= dict(sec_per_step=config.global_batch / rate, windows=config.windows)
    procs.record(contract.ThroughputSummary(warmup_steps=config.warmup_steps, **summary))
    return contract.Exit.OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
