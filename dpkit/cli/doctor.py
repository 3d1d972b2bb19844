"""A self-check of this machine, to run before a class: ``python -m dpkit doctor``.

Not a lesson: it runs what the lessons teach, on the devices a lesson would get here,
and prints one report to paste into a bug report. It uses ``devices`` (lesson 00),
``models`` (01), ``towers`` (02), ``gradients`` (03) and ``bench`` (05). The report has:

* the TensorFlow build (version, CUDA and cuDNN it was built for), Python, the platform;
* the GPUs TensorFlow sees (name, compute capability), or "no GPU";
* what ``devices.setup(n)`` would do here for 1, 2, 4 and 8 devices;
* checks, each ``ok``, ``FAILED`` (with the numbers) or ``skipped`` (with the reason):

  a. the averaged tower gradients equal the gradients of one big batch;
  b. one step of ``MirroredStrategy`` leaves the same weights as one tower step;
  c. which cross-device reduction ``MirroredStrategy`` picked, and why;
  d. memory in use on each GPU after those steps;
  e. throughput on 1, 2 and all devices, each in a fresh process (``dpkit.bench``);
  f. the GPU checks this machine skipped, listed plainly.

The checks a-d run in this process on the devices of one ``devices.setup(k)`` call (``k``
is every GPU if there are two or more, else 2 logical devices), so :func:`run` must come
before any other TensorFlow code in the process; the command line guarantees that.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import textwrap
import time

import keras
import numpy as np
import tensorflow as tf

from dpkit import bench, checking, devices, gradients, models, towers
from dpkit.plumbing import contract, quota

OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"

#: Device counts whose plan the report shows.
PLAN_COUNTS = (1, 2, 4, 8)

#: The bar of a comparison (``checking.agree``), in float32 epsilons of the largest
#: reference value: about 1.2e-4 of it. The towers add the same float32 numbers in another
#: order, which changes the last bits only, on any CPU or GPU.
ULPS = 1024

#: Check b fails when the tower step moved no weight by more than this: a step that
#: changes nothing would make every comparison after it pass.
MIN_MOVE = 1e-5

#: Memory per logical GPU for the checks a-d when GPUs are split (megabytes). Small: the
#: tiny model needs little, and check e's children then find room on the same GPUs.
GPU_MEMORY_MB = 512

#: The checks' model: ``models.mnist_mlp`` on 8x8 images, without dropout (so that every
#: tower and replica computes the same function), and its SGD learning rate.
INPUT_SHAPE, HIDDEN_UNITS, LEARNING_RATE = (8, 8, 1), 32, 0.1

#: Examples per device in the checks' batch.
EXAMPLES_PER_DEVICE = 8

#: Check e: a short strong-scaling run of the smallest model; the global batch is
#: ``THROUGHPUT_BATCH_PER_COUNT`` times a multiple of every device count.
THROUGHPUT = {"model": "mnist_mlp", "strategy": "towers", "warmup_steps": 2}
THROUGHPUT |= {"window_steps": 5, "windows": 2, "timeout": 120.0}
THROUGHPUT_BATCH_PER_COUNT = 32

NO_COMPUTE = (
    "logical devices add no compute (they share the cores or the GPU underneath), so no "
    "speed-up is expected from them; only separate physical GPUs can give one"
)

SMALL_MODEL = (
    "a model this small is limited by the cost of a step, not compute: the speed-up shows "
    "the GPUs run, not how well they scale (python -m dpkit bench measures that)"
)


class Machine:
    """What the in-process checks share: the devices of one ``devices.setup``, one batch,
    one ``MirroredStrategy`` (a process should make only one)."""

    def __init__(self, num_gpus: int):
        self.num_gpus = num_gpus
        self.count = min(num_gpus, devices.MAX_DEVICES) if num_gpus >= 2 else 2
        self._setup = self._strategy = self._failed = None
        rng = np.random.default_rng(0)
        batch = EXAMPLES_PER_DEVICE * self.count
        self.x = rng.random((batch, *INPUT_SHAPE), dtype=np.float32)
        self.y = rng.integers(0, 10, batch).astype(np.int32)

    def setup(self) -> devices.DeviceSetup:
        if self._failed:  # say it once, above the checks
            raise RuntimeError(f"devices.setup({self.count}) failed (the reason is above)")
        if self._setup is None:
            self._failed = True
            self._setup = devices.setup(self.count, gpu_memory_mb=GPU_MEMORY_MB)
            self._failed = False
            # TF32 matmuls (the default on recent NVIDIA GPUs) round to 10 bits: compare in float32.
            tf.config.experimental.enable_tensor_float_32_execution(False)
        return self._setup

    @property
    def names(self) -> list[str]:
        return list(self.setup().devices)

    @property
    def where(self) -> str:
        s = self.setup()
        return f"{s.num_devices} {s.kind}s"

    def strategy(self):
        if self._strategy is None:
            self._strategy = tf.distribute.MirroredStrategy(self.names)
        return self._strategy

    def model(self):
        """The checks' model, with the same initial weights every time."""
        keras.utils.set_random_seed(0)
        return models.mnist_mlp(INPUT_SHAPE, 10, hidden_units=HIDDEN_UNITS, dropout=0.0)


def compare(what: str, got, want, where: str = "") -> tuple[str, str]:
    """Judge the arrays ``got`` against ``want`` with ``checking.agree`` and a bar of
    :data:`ULPS`: ``(OK or FAILED, the largest gap)``. ``what`` (``"gradient"``) and ``where``
    (the devices) are for the message."""
    got = [np.asarray(g, dtype=np.float64) for g in got]
    want = [np.asarray(w, dtype=np.float64) for w in want]
    on = f" on {where}" if where else ""
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        shapes = [g.shape for g in got], [w.shape for w in want]
        return FAILED, f"{what} shapes differ: {shapes[0]} vs reference {shapes[1]}{on}"
    check = checking.agree(got, want, what=what, ulps=ULPS)
    if check.scale == 0.0:
        return FAILED, f"the reference {what}s are all zero, so nothing was compared{on}"
    detail = (
        f"largest {what} gap {check.gap:.1e} (reference values up to {check.scale:.2g}; "
        f"the bar is {check.bar:.1e}, {ULPS} float32 epsilons of that){on}"
    )
    return (OK, detail) if check else (FAILED, detail)


def check_towers(machine: Machine) -> tuple[str, str]:
    """a. The towers' averaged gradients against one big batch's, at the same weights."""
    devs, x, y = machine.names, machine.x, machine.y
    with towers.variables_on(devs, "cpu"):
        model = machine.model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    tower_grads, _, weights, _ = towers.tower_gradients(model, loss_fn, x, y, devs)
    averaged = gradients.average_gradients(tower_grads, weights)
    with tf.device(devs[0]), tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    whole = tape.gradient(loss, model.trainable_variables)
    return compare("gradient", averaged, whole, f"{machine.where}, batch {len(x)}")


def check_mirrored(machine: Machine) -> tuple[str, str]:
    """b. One tower step against one ``MirroredStrategy`` step, same start, same batch."""
    devs, x, y = machine.names, machine.x, machine.y
    with towers.variables_on(devs, "cpu"):
        tower_model = machine.model()
    start = tower_model.get_weights()
    towers.make_tower_train_step(tower_model, keras.optimizers.SGD(LEARNING_RATE), devs)(x, y)
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(tower_model.get_weights(), start))
    if moved <= MIN_MOVE:
        return FAILED, f"the tower step changed no weight by more than {MIN_MOVE:g} ({moved:.1e})"

    strategy = machine.strategy()
    with strategy.scope():
        model = machine.model()
        model.set_weights(start)
        optimizer = keras.optimizers.SGD(LEARNING_RATE)
    step = towers.make_mirrored_train_step(model, optimizer, strategy, len(x))
    for batch in strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors((x, y))):
        step(*batch)
    where = f"{machine.where}, after one SGD step that moved them up to {moved:.2g}"
    return compare("weight", tower_model.get_weights(), model.get_weights(), where)


def check_reduction(machine: Machine) -> tuple[str, str]:
    """c. The cross-device reduction ``MirroredStrategy`` picked; never FAILED."""
    ops = getattr(machine.strategy().extended, "_cross_device_ops", None)
    if ops is None:
        return SKIPPED, "this TensorFlow does not show it (no strategy.extended._cross_device_ops)"
    name = type(ops).__name__
    options = getattr(ops, "_options", None)
    implementation = getattr(getattr(options, "implementation", None), "name", "")
    picked = f"{name} ({implementation})" if implementation and implementation != "AUTO" else name
    setup = machine.setup()
    if setup.case == "physical_gpus" and "NCCL" in picked.upper():
        why = f"NCCL all-reduce across {setup.num_devices} physical GPUs, as expected"
    elif setup.case == "physical_gpus":
        why = (
            f"no NCCL on {setup.num_devices} physical GPUs (is this build without NCCL, as on "
            "Windows?): training works, but the all-reduce is slower"
        )
    else:
        why = (
            f"on {machine.where}: NCCL needs >= 2 physical GPUs; logical GPUs/CPU use ring "
            "collectives or reduction to one device"
        )
    return OK, f"{picked}: {why}"


def check_memory(machine: Machine) -> tuple[str, str]:
    """d. Memory in use on each GPU after the steps of a and b."""
    setup = machine.setup()
    if setup.device_type != "GPU":
        return SKIPPED, "no GPU"
    parts = []
    for name in setup.devices:
        info = tf.config.experimental.get_memory_info(name.replace("/device:", ""))
        used, peak = info["current"] / 2**20, info["peak"] / 2**20
        parts.append(f"{name.replace('/device:', '')} {used:.1f} MB (peak {peak:.1f} MB)")
    limit = f"; limit {GPU_MEMORY_MB} MB each" if setup.case == "logical_gpus" else ""
    return OK, "in use: " + ", ".join(parts) + limit


def check_throughput(machine: Machine, echo=print) -> tuple[str, str]:
    """e. Examples/sec on 1, 2 and all devices, one fresh process each (``dpkit.bench``)."""
    counts = sorted({1, 2, machine.count})
    batch = THROUGHPUT_BATCH_PER_COUNT * math.lcm(*counts)
    sweep = bench.Sweep(counts, batch=batch, measure_peak=False, **THROUGHPUT)

    def progress(event):
        if event.kind == "result":
            echo(f"           {bench.describe_event(event)}")

    report = sweep.run(progress)
    failed = [r for r in report.results if not r.ok]
    if failed:
        r = failed[0]
        why = (r.error or "no reason given").strip().splitlines()[-1][:300]
        return FAILED, f"{r.config.devices} device(s) {r.status}: {why}"
    rates = ", ".join(
        f"{row['devices']}: {row['examples_per_sec']:,.0f} examples/s ({row['speedup']:.2f}x)"
        for row in report.rows()
    )
    cases = {r.device_case for r in report.results if r.config.devices > 1}
    note = f"; {NO_COMPUTE}" if cases - {"physical_gpus"} else f"; {SMALL_MODEL}"
    return OK, f"{THROUGHPUT['model']}, global batch {batch}, devices {rates}{note}"


def build_lines(tf) -> list[str]:
    """The TensorFlow build, Python and the platform."""
    info = dict(tf.sysconfig.get_build_info())
    lines = [
        f"  TensorFlow {tf.__version__}, Keras {keras.__version__}, NumPy {np.__version__}",
        f"  Python {platform.python_version()} ({sys.executable})",
        f"  {platform.platform()}, {os.cpu_count()} CPU cores",
        f"  this process may use: {quota.read().describe()}",
        f"  is_cuda_build: {info.get('is_cuda_build', False)}",
    ]
    for key in ("cuda_version", "cudnn_version", "cuda_compute_capabilities"):
        if info.get(key):
            lines.append(f"  {key}: {info[key]}")
    return lines


def gpu_lines(tf, gpus, cuda_build: bool) -> list[str]:
    """Each physical GPU's name and compute capability, or "no GPU"."""
    if not gpus:
        hint = " (a CUDA build: if this machine has an NVIDIA GPU, run nvidia-smi)"
        return [f"  no GPU: TensorFlow lists no physical GPU{hint if cuda_build else ''}"]
    lines = []
    for gpu in gpus:
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability")
        cc = f", compute capability {'.'.join(map(str, capability))}" if capability else ""
        lines.append(f"  {gpu.name}: {details.get('device_name', 'unknown GPU')}{cc}")
    return lines


def plan_lines(num_gpus: int) -> list[str]:
    """What ``devices.setup(n)`` would do here, for each of :data:`PLAN_COUNTS`."""
    lines = []
    for n in PLAN_COUNTS:
        p = devices.plan(n, num_gpus)
        lines.append(
            f"  {n} device(s): {p.case}: {p.explanation}; physical_index {p.physical_index}"
        )
    return lines


def _attempt(check, *args) -> tuple[str, str]:
    """Run one check; an exception is a FAILED with its type and first line."""
    try:
        status, detail = check(*args)
    except Exception as err:  # noqa: BLE001 - any error is this check's failure, to report
        first = (str(err).strip().splitlines() or [""])[0][:300]
        return FAILED, f"{type(err).__name__}: {first}"
    return status, detail


def run(echo=print) -> int:
    """Check this machine and print one report.

    Call it before any other TensorFlow code in the process (it calls ``devices.setup``).
    It takes well under a minute on a 2-core CPU, most of it in check e's children.
    ``echo`` is called with each line of the report as it is made. Returns the exit code: 0
    when no check FAILED, 1 otherwise.
    """
    started = time.perf_counter()
    echo("dpkit doctor: a self-check of this machine (paste all of it into a bug report)")

    gpus = tf.config.list_physical_devices("GPU")  # does not start TensorFlow's runtime
    cuda_build = bool(dict(tf.sysconfig.get_build_info()).get("is_cuda_build"))
    echo("\nTensorFlow build")
    for line in build_lines(tf):
        echo(line)
    echo("\nGPUs")
    for line in gpu_lines(tf, gpus, cuda_build):
        echo(line)
    echo(f"\nplans: what devices.setup(n) does on this machine ({len(gpus)} GPU(s))")
    for line in plan_lines(len(gpus)):
        echo(line)

    machine = Machine(len(gpus))
    echo(f"\nchecks (a-d in this process on devices.setup({machine.count}); e in fresh processes)")
    try:
        echo(textwrap.indent(devices.describe(machine.setup()), "    "))
    except RuntimeError as err:  # checks a-d will say FAILED with this reason
        echo(f"    devices.setup({machine.count}) failed: {err}")
    checks = [
        ("a", "the tower step equals one big batch", check_towers, ()),
        ("b", "a MirroredStrategy step equals the towers", check_mirrored, ()),
        ("c", "the cross-device reduction MirroredStrategy picked", check_reduction, ()),
        ("d", "memory in use per GPU after a step", check_memory, ()),
        ("e", "throughput on 1, 2 and all devices", check_throughput, (echo,)),
    ]
    results = []
    for letter, title, check, extra in checks:
        status, detail = _attempt(check, machine, *extra)
        results.append((letter, title, status, detail))
        echo(f"  {status:<8} {letter}. {title}: {detail}")

    skipped = [f"{c}. {title}: {why}" for c, title, s, why in results if s == SKIPPED and c == "d"]
    if not gpus:
        skipped.insert(0, "GPU names, compute capability and memory: no GPU")
    if len(gpus) < 2:
        skipped.append(
            f"NCCL all-reduce between physical GPUs: needs >= 2 GPUs, this has {len(gpus)}"
        )
    echo("\nf. GPU checks skipped on this machine" + (":" if skipped else ": none"))
    for line in skipped:
        echo(f"   - {line}")

    counts = {s: sum(r[2] == s for r in results) for s in (OK, SKIPPED, FAILED)}
    echo(
        f"\nsummary: {counts[OK]} ok, {counts[SKIPPED]} skipped, {counts[FAILED]} FAILED "
        f"in {time.perf_counter() - started:.0f} s"
    )
    return contract.Exit.FAILED if counts[FAILED] else contract.Exit.OK
