"""Choose the devices a lesson trains on, the same way on every machine.

Introduced in lesson 00. TensorFlow fixes its list of devices the first time it
runs an op, so :func:`setup` must be called before anything else touches
TensorFlow. It picks one of three cases:

* ``"physical_gpus"``: the machine has at least ``n`` GPUs; use the first ``n``.
* ``"logical_gpus"``: it has fewer (but at least one); split *every* GPU into
  logical GPUs, as evenly as possible (4 on 2 GPUs: 2 each; 3 on 2: 2 + 1), each
  with a memory limit. ``Plan.physical_index`` says which GPU each one sits on.
* ``"logical_cpus"``: it has no GPU; split the CPU into ``n`` logical CPUs.

``plan(n, num_gpus).calls`` prints the ``tf.config`` calls each case makes, so you
can read what ``setup`` would do on a machine you do not have.

Logical devices share the hardware underneath them. They let the same tower
code run unchanged on a laptop, one GPU or many, but they add no compute.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpkit.plumbing import checks

#: More devices than this teaches nothing new and only slows TensorFlow's start-up.
MAX_DEVICES = 64

#: Memory given to each logical GPU when physical GPUs are split (``setup``, ``plan`` and
#: the command line's ``--gpu-memory-mb``): 1 GB, so that 8 logical GPUs fit the 8 GB of
#: the smallest GPUs still common in teaching labs, and the lessons' models fit in one.
DEFAULT_GPU_MEMORY_MB = 1024

CASES = ("physical_gpus", "logical_gpus", "logical_cpus")

_EXPLANATIONS = {
    "physical_gpus": "{n} physical GPU(s) used as they are",
    "logical_gpus": "{gpus} split into {n} logical GPUs of {mb} MB each{shares}: "
    "the compute underneath is {g}, not {n}",
    "logical_cpus": "no GPU found: the CPU split into {n} logical CPU devices "
    "(they share the same cores)",
}


@dataclass(frozen=True)
class Plan:
    """What :func:`setup` will do on a machine, decided before touching TensorFlow."""

    num_devices: int  # how many devices the lesson asked for
    case: str  # one of CASES
    device_type: str  # "GPU" or "CPU"
    gpu_memory_mb: int | None = None  # memory limit per logical GPU (case "logical_gpus" only)
    # for each logical device, the index of the physical device it sits on, e.g. (0, 0, 1, 1)
    # for 4 devices on 2 GPUs (always 0 on a CPU)
    physical_index: tuple[int, ...] = ()

    @property
    def num_physical(self) -> int:
        """Physical devices underneath: the real compute."""
        return len(set(self.physical_index))

    @property
    def per_physical(self) -> tuple[int, ...]:
        """Logical devices on each physical device, e.g. ``(2, 1)`` for 3 on 2 GPUs."""
        return tuple(self.physical_index.count(i) for i in range(self.num_physical))

    @property
    def explanation(self) -> str:
        counts = self.per_physical
        text = _EXPLANATIONS[self.case].format(
            n=self.num_devices,
            mb=self.gpu_memory_mb,
            g="1 GPU" if len(counts) == 1 else f"{len(counts)} GPUs",
            gpus="GPU 0" if len(counts) == 1 else f"GPUs 0-{len(counts) - 1}",
            shares="" if len(counts) == 1 else f" ({' + '.join(map(str, counts))})",
        )
        if len(set(counts)) > 1:
            text += "; uneven, so every step waits for the busier GPUs"
        return text

    @property
    def calls(self) -> tuple[str, ...]:
        """The ``tf.config`` calls :func:`setup` makes for this plan, as lines of Python.

        Introduced in lesson 00, to show what ``setup`` does on machines you do not
        have. The lines come from the same steps ``setup`` carries out (``_steps``),
        so the text cannot drift from what it does. Paste them at the top of a
        program, before any other TensorFlow code, to get the same devices without dpkit.
        The first line, ``tf.config.list_physical_devices``, names the devices the others use.
        """
        steps = _steps(self)
        listing = "gpus" if self.device_type == "GPU" else "cpus"
        first = f'{listing} = tf.config.list_physical_devices("{self.device_type}")'
        return (first, *(_render(step) for step in steps))


@dataclass(frozen=True)
class DeviceSetup:
    """The result of :func:`setup`."""

    # full TensorFlow device names, e.g. ("/device:CPU:0", "/device:CPU:1"); pass them to
    # tf.device or to a strategy
    devices: tuple[str, ...]
    case: str  # which of CASES applied
    device_type: str  # "GPU" or "CPU"
    explanation: str  # one sentence saying what was done
    physical: tuple[str, ...]  # names of the physical devices underneath
    physical_index: tuple[int, ...] = ()  # for each device, the index in physical of its own

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @property
    def kind(self) -> str:
        """``"physical GPU"``, ``"logical GPU"`` or ``"logical CPU"``."""
        return {"physical_gpus": "physical GPU", "logical_gpus": "logical GPU"}.get(
            self.case, "logical CPU"
        )

    def __str__(self) -> str:
        return describe(self)


# The last successful setup in this process: setup(n) returns it again for the same n,
# and describe() shows it by default.
_current: DeviceSetup | None = None


def count(n, what: str = "setup(n): n", example: str = "e.g. devices.setup(2)") -> int:
    """``n`` as an int if it is a whole number from 1 to :data:`MAX_DEVICES`, else a
    ``ValueError``: the one device-count rule of :func:`setup`, :func:`plan`, ``report.Config``
    and ``bench.Sweep`` (the command line's), which ``params.whole(1, MAX_DEVICES)`` words alike.
    """
    if checks.is_whole(n) and n < 1:
        example = f"at least 1 device is needed to train on; {example}"
    elif checks.is_whole(n) and n > MAX_DEVICES:
        shared = "logical devices share the same hardware, so 2 to 8 show the ideas"
        example = f"that is above the maximum, and {shared}; {example}"
    return checks.whole(n, what, 1, example, maximum=MAX_DEVICES)


def memory_mb(value, what: str = "gpu_memory_mb") -> int:
    """``value`` as an int if it is a whole number of megabytes >= 1 (each logical GPU's
    memory when a GPU is split), else a ``ValueError`` naming ``what``."""
    return checks.whole(value, what, 1, f"megabytes, e.g. the default {DEFAULT_GPU_MEMORY_MB}")


def plan(n: int, num_gpus: int, *, gpu_memory_mb: int = DEFAULT_GPU_MEMORY_MB) -> Plan:
    """Decide which case applies for ``n`` devices on a machine with ``num_gpus`` GPUs.

    Pure function: it touches no TensorFlow state, so you can ask what would
    happen on a machine you do not have (lesson 00 does). ``gpu_memory_mb`` is the memory of
    each logical GPU when a GPU is split.
    """
    n = count(n)
    num_gpus = checks.whole(num_gpus, "plan(): num_gpus", 0)
    gpu_memory_mb = memory_mb(gpu_memory_mb)
    if num_gpus >= n:
        return Plan(n, "physical_gpus", "GPU", physical_index=tuple(range(n)))
    if num_gpus >= 1:
        return Plan(n, "logical_gpus", "GPU", int(gpu_memory_mb), spread(n, num_gpus))
    return Plan(n, "logical_cpus", "CPU", physical_index=(0,) * n)


def spread(n: int, num_gpus: int) -> tuple[int, ...]:
    """Which of ``num_gpus`` GPUs each of ``n`` logical GPUs sits on: as even as possible,
    the first GPUs taking one more when ``n`` does not divide (``spread(3, 2) == (0, 0, 1)``)."""
    used = min(n, num_gpus)
    base, extra = divmod(n, used)
    return tuple(i for i in range(used) for _ in range(base + (i < extra)))


# One step of a setup, as data, so that setup() runs it and Plan.calls prints it:
#   ("visible", k)              show TensorFlow only the first k GPUs
#   ("growth", i)               let GPU i's memory grow on demand
#   ("split", which, i, k, mb)  split cpus[i] or gpus[i] into k logical devices (mb: limit)
def _steps(p: Plan) -> tuple[tuple, ...]:
    n = p.num_devices
    if p.case == "physical_gpus":
        # Memory growth is set per physical GPU. TensorFlow refuses it on a GPU that is
        # split into logical devices, which is why the split case sets a limit instead.
        return (("visible", n), *(("growth", i) for i in range(n)))
    if p.case == "logical_gpus":
        splits = (("split", "gpus", i, k, p.gpu_memory_mb) for i, k in enumerate(p.per_physical))
        return (("visible", p.num_physical), *splits)
    if p.case == "logical_cpus":
        return (("split", "cpus", 0, n, None),)
    raise ValueError(f"unknown case {p.case!r}; expected one of {CASES}.")


def _render(step: tuple) -> str:
    if step[0] == "visible":
        return f'tf.config.set_visible_devices(gpus[:{step[1]}], "GPU")'
    if step[0] == "growth":
        return f"tf.config.experimental.set_memory_growth(gpus[{step[1]}], True)"
    _, which, i, k, mb = step
    limit = "" if mb is None else f"memory_limit={mb}"
    return (
        f"tf.config.set_logical_device_configuration({which}[{i}], "
        f"[tf.config.LogicalDeviceConfiguration({limit})] * {k})"
    )


def _apply(tf, step: tuple, gpus: list, cpus: list) -> None:
    if step[0] == "visible":
        tf.config.set_visible_devices(gpus[: step[1]], "GPU")
    elif step[0] == "growth":
        tf.config.experimental.set_memory_growth(gpus[step[1]], True)
    else:
        _, which, i, k, mb = step
        device = (gpus if which == "gpus" else cpus)[i]
        config = [tf.config.LogicalDeviceConfiguration(memory_limit=mb) for _ in range(k)]
        tf.config.set_logical_device_configuration(device, config)


def _restart_message(wanted: int, have: str) -> str:
    return (
        f"TensorFlow is already initialised with {have}, and a process cannot change its "
        f"device list afterwards, so setup({wanted}) cannot take effect. Restart the kernel "
        "(Kernel > Restart) and call devices.setup() before any other TensorFlow code, or run "
        "each device count in its own process with the sweep runner (dpkit.bench)."
    )


def setup(n: int, *, gpu_memory_mb: int = DEFAULT_GPU_MEMORY_MB) -> DeviceSetup:
    """Make ``n`` devices available to TensorFlow and return their names.

    Call it once, before any other TensorFlow code in the process. Calling it
    again with the same ``n`` returns the same result. On a GPU machine (Colab's one
    GPU, say) it prints what it did and the ``tf.config`` calls it made; on a CPU it
    prints nothing (lesson 00 shows those calls). ``n`` is 1 to ``MAX_DEVICES``;
    ``gpu_memory_mb`` is the memory of each logical GPU when a GPU has to be split.

    Raises ``RuntimeError`` when TensorFlow already runs with a different device list
    (restart the kernel, or use the sweep runner for several counts).
    """
    global _current
    n = count(n)
    if _current is not None:
        if _current.num_devices == n:
            return _current
        raise RuntimeError(
            _restart_message(n, f"{_current.num_devices} {_current.device_type} device(s)")
        )

    import tensorflow as tf  # here: `dpkit --help`, bench and report import devices without TF

    # TensorFlow's Python INFO lines (which devices a strategy uses, how it all-reduces) would
    # fill the lessons' outputs; warnings and errors still show.
    tf.get_logger().setLevel("WARNING")
    gpus = tf.config.list_physical_devices("GPU")  # does not initialise the runtime
    cpus = tf.config.list_physical_devices("CPU")
    p = plan(n, len(gpus), gpu_memory_mb=gpu_memory_mb)
    physical = (gpus if p.device_type == "GPU" else cpus)[: p.num_physical]
    try:
        for step in _steps(p):  # the same steps Plan.calls prints
            _apply(tf, step, gpus, cpus)
    except RuntimeError:
        # TensorFlow was initialised by code that ran before us. Accept it only
        # if it already has exactly the devices we would have made.
        logical = tf.config.list_logical_devices(p.device_type)
        if len(logical) != n:
            have = f"{len(logical)} {p.device_type} device(s)"
            raise RuntimeError(_restart_message(n, have)) from None

    logical = tf.config.list_logical_devices(p.device_type)
    if len(logical) != n:  # e.g. a GPU split refused; better to stop than mislead
        raise RuntimeError(
            f"asked TensorFlow for {n} {p.device_type} devices but it reports {len(logical)}; "
            "restart the kernel and try again, or report this machine's `python -m dpkit "
            "devices` output."
        )
    if p.device_type == "GPU":  # e.g. Colab's one GPU: say what was done to it, and how
        print(f"devices.setup({n}): {p.explanation}. The calls it made:")
        print("\n".join(f"    {line}" for line in p.calls))
    names = tuple(d.name for d in logical)
    under = tuple(d.name for d in physical)
    _current = DeviceSetup(names, p.case, p.device_type, p.explanation, under, p.physical_index)
    return _current


def describe(result: DeviceSetup | None = None) -> str:
    """A table (print it) of the devices of ``result``, what :func:`setup` returned (by
    default the current setup)."""
    result = result or _current
    if result is None:
        raise RuntimeError("no devices set up yet: call devices.setup(n) first.")
    rows = [("index", "device", "kind", "backed by")]
    for i, name in enumerate(result.devices):
        backing = result.physical[result.physical_index[i] if result.physical_index else 0]
        rows.append((str(i), name, result.kind, backing.replace("/physical_device:", "")))
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return f"{result.explanation}\n" + "\n".join(lines)
