"""What a throughput run is, what it measured, and what a sweep says about scaling.

Introduced in lesson 05: a :class:`Config` per run, the :class:`Result` of each, and the
:class:`Report` of a sweep (a table, a plot, a JSON file). :mod:`dpkit.bench` runs them.

Scaling, from the results of a sweep:

* speed-up ``S(n) = rate(n) / rate(n0)`` against the smallest device count ``n0``;
* efficiency ``E(n) = S(n) / (n / n0)``: 1.0 is perfect scaling;
* strong scaling keeps the global batch fixed (each device gets less work as ``n``
  grows); weak scaling keeps the per-device batch fixed (the global batch grows);
* model FLOPs utilisation ``MFU = rate x FLOPs per training example / peak FLOP/s``, the
  peak measured once with a large matmul on the same hardware.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os
import tempfile
from dataclasses import dataclass, field

from dpkit import devices, models
from dpkit.plumbing import checks

STRATEGIES = ("single", "towers", "mirrored")
DATASETS = ("synthetic", "digits", "mnist", "fashion_mnist", "cifar10")

#: The results table's column heads (:meth:`Report.table`, and the notebook's HTML table).
COLUMNS = ("devices", "global batch", "examples/sec", "spread", "speed-up", "efficiency", "MFU")

#: Results file format version (:meth:`Report.save` / :meth:`Report.load`).
FORMAT_VERSION = 1


#: The whole-number fields of a :class:`Config`: (the smallest allowed, an example).
WHOLE_FIELDS = {
    "batch": (1, 256),
    "warmup_steps": (0, 5),
    "window_steps": (1, 5),
    "windows": (1, 5),
}


def python_spelling(name: str, value=None) -> str:
    """How a Python caller writes a field: ``batch``, or ``batch=256`` with a value."""
    return name if value is None else f"{name}={value}"


_SPELLING = contextvars.ContextVar("spelling", default=python_spelling)


@contextlib.contextmanager
def spelled(spell):
    """Inside ``with spelled(spell):`` a Config's errors word its fields with ``spell``
    (the command line's flags, ``--batch 256``, instead of ``batch=256``)."""
    token = _SPELLING.set(spell)
    try:
        yield
    finally:
        _SPELLING.reset(token)


@dataclass(frozen=True)
class Config:
    """One throughput run."""

    model: str = "lenet5"  # a key of models.MODELS
    devices: int = 1  # how many devices the child sets up (dpkit.devices.setup)
    # "single" (one device, the plain step), "towers" (dpkit.towers.make_tower_train_step) or
    # "mirrored" (tf.distribute.MirroredStrategy, custom loop)
    strategy: str = "towers"
    batch: int = 256  # examples per step: global, or per device when per_device is true
    per_device: bool = False  # whether batch is per device (weak scaling) or global (strong)
    # "synthetic" (one batch from memory: the input pipeline never limits speed) or a dataset
    # name for dpkit.data.load
    dataset: str = "synthetic"
    warmup_steps: int = 3  # steps dropped before measuring (tracing, allocation)
    window_steps: int = 5  # steps per measurement window
    windows: int = 4  # measurement windows to run
    timeout: float = 180.0  # seconds the child may take in all (start-up included)
    seed: int = 0  # seeds weights and data
    measure_peak: bool = False  # also measure the hardware's matmul peak (for MFU)

    def __post_init__(self):
        self.validate()

    @property
    def global_batch(self) -> int:
        return self.batch * self.devices if self.per_device else self.batch

    @property
    def steps(self) -> int:
        return self.warmup_steps + self.window_steps * self.windows

    def validate(self) -> None:
        """Raise ``ValueError`` naming the problem and the fix; no TensorFlow involved.

        Fields are worded as Python's ``batch=256`` unless :func:`spelled` says otherwise
        (the command line words them as its flags, ``--batch 256``)."""
        spell = _SPELLING.get()
        checks.one_of(self.model, models.MODELS, spell("model"))
        checks.one_of(self.strategy, STRATEGIES, spell("strategy"))
        checks.one_of(self.dataset, DATASETS, spell("dataset"))
        devices.count(self.devices, spell("devices"), f"e.g. {spell('devices', 2)}")
        for name, (low, example) in WHOLE_FIELDS.items():
            checks.whole(getattr(self, name), spell(name), low, f"e.g. {spell(name, example)}")
        if self.strategy == "single" and self.devices != 1:
            raise ValueError(
                f"strategy 'single' trains on one device, but devices={self.devices}; use "
                "strategy='towers' or 'mirrored' for several devices (single is the baseline)."
            )
        if not self.per_device:
            over = f"over {self.devices} devices"
            weak = ", or weak scaling (a per-device batch) instead"
            checks.divides(self.batch, self.devices, f"a global batch of {self.batch}", over, weak)
        checks.positive_seconds(self.timeout, spell("timeout"))

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Config:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown Config field(s) {sorted(unknown)}; known: {sorted(known)}.")
        return cls(**values)


@dataclass
class Result:
    """What one run measured (or why it failed)."""

    config: Config
    # "ok", "failed" (crashed), "timeout" (killed at the timeout) or "stopped" (on request)
    status: str = "ok"
    num_devices: int | None = None  # devices the child reports it trained on
    device_names: list = field(default_factory=list)  # their TensorFlow names
    device_case: str = ""  # which dpkit.devices.CASES applied in the child
    physical_devices: int = 1  # physical devices underneath (1 for logical devices)
    window_rates: list = field(default_factory=list)  # examples/sec of each window
    examples_per_sec: float | None = None  # median over windows
    mean_examples_per_sec: float | None = None  # mean over windows
    spread: float | None = None  # (max - min) / median of the windows
    sec_per_step: float | None = None  # median seconds per step
    flops_per_example: int | None = None  # training FLOPs per example (forward + backward)
    peak_flops_per_sec: float | None = None  # matmul peak of one physical device, if measured
    error: str = ""  # the tail of the child's stderr when it did not finish
    seconds: float = 0.0  # wall time of the whole child, start-up included
    pid: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def model_flops_per_sec(self) -> float | None:
        if self.examples_per_sec is None or self.flops_per_example is None:
            return None
        return self.examples_per_sec * self.flops_per_example

    def as_dict(self) -> dict:
        values = dataclasses.asdict(self)
        values["config"] = self.config.as_dict()
        return values

    @classmethod
    def from_dict(cls, values: dict) -> Result:
        values = dict(values)
        values["config"] = Config.from_dict(values["config"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def _umask() -> int:
    """This process's umask (reading it means setting it; it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@dataclass
class Report:
    """The results of a sweep (one :class:`Result` per device count, in the order they ran),
    with speed-up, efficiency and MFU."""

    results: list = field(default_factory=list)
    scaling: str = "strong"  # or "weak"
    peak_flops_per_sec: float | None = None  # matmul peak of one physical device, if measured

    def rows(self) -> list[dict]:
        """One dict per result: devices, examples/sec, speed-up, efficiency, MFU, status."""
        ok = [r for r in self.results if r.ok]
        base = min(ok, key=lambda r: r.config.devices) if ok else None
        rows = []
        for r in self.results:
            row = {
                "devices": r.config.devices,
                "reported_devices": r.num_devices,
                "global_batch": r.config.global_batch,
                "status": r.status,
                "examples_per_sec": r.examples_per_sec,
                "spread": r.spread,
                "sec_per_step": r.sec_per_step,
                **dict.fromkeys(("speedup", "efficiency", "mfu")),  # None unless computed below
            }
            if r.ok and base is not None:
                row["speedup"] = r.examples_per_sec / base.examples_per_sec
                row["efficiency"] = row["speedup"] / (r.config.devices / base.config.devices)
            if r.ok and self.peak_flops_per_sec and r.model_flops_per_sec:
                row["mfu"] = r.model_flops_per_sec / (
                    self.peak_flops_per_sec * max(1, r.physical_devices)
                )
            rows.append(row)
        return rows

    def cells(self) -> list[list[str]]:
        """:meth:`rows` formatted for a table, one list per row; a failed run shows its status."""
        table = []
        for row in self.rows():
            cells = [f"{row['devices']:d}", f"{row['global_batch']:d}"]
            if row["status"] != "ok":
                table.append([*cells, row["status"]])
                continue
            cells += [f"{row['examples_per_sec']:,.0f}", f"{row['spread']:.0%}"]
            cells += [f"{row['speedup']:.2f}x", f"{row['efficiency']:.0%}"]
            table.append([*cells, f"{row['mfu']:.1%}" if row["mfu"] is not None else "n/a"])
        return table

    def table(self) -> str:
        """A plain-text table (what the command line and the text fallback print)."""
        lines = ["  ".join(f"{h:>12s}" for h in COLUMNS)]
        for cells in self.cells():
            padded = [f"{c:>12s}" for c in cells]
            if len(cells) < len(COLUMNS):  # a run that failed: its status, not padded
                padded[-1] = cells[-1]
            lines.append("  ".join(padded))
        if self.peak_flops_per_sec:
            lines.append(
                f"matmul peak of one physical device: {self.peak_flops_per_sec / 1e9:.1f} GFLOP/s"
            )
        return "\n".join(lines)

    def plot(self, fig=None, *, live: dict | None = None):
        """Draw throughput per device count, and speed-up against the ideal line; return the
        figure (``fig``, cleared first, or a new ``matplotlib.figure.Figure``: not pyplot, so it
        is safe in a thread). ``live``: ``{devices: [window rates]}`` of runs still going."""
        from matplotlib.figure import Figure

        fig = fig or Figure(figsize=(9, 3.4))
        fig.clear()
        ax_rate, ax_speed = fig.subplots(1, 2)
        rows = [r for r in self.rows() if r["status"] == "ok"]
        counts = sorted({c.config.devices for c in self.results} | set(live or {}))
        positions = {n: i for i, n in enumerate(counts)}
        medians = [r["examples_per_sec"] for r in rows]
        ax_rate.bar([positions[r["devices"]] for r in rows], medians, color="#219ebc", width=0.6)
        for r in self.results:
            x = [positions[r.config.devices]] * len(r.window_rates)
            ax_rate.plot(x, r.window_rates, ".", color="#023047", ms=4)
        for n, rates in (live or {}).items():
            ax_rate.plot([positions[n]] * len(rates), rates, "o", color="#fb8500", ms=5)
        ax_rate.set_xticks(range(len(counts)), [str(n) for n in counts])
        ax_rate.set(xlabel="devices", ylabel="examples / sec")
        ax_rate.set_title("throughput (bars: median; dots: windows)", fontsize=10)
        if rows:
            xs = [r["devices"] for r in rows]
            n0 = min(xs)
            top = max(counts) if counts else n0
            ax_speed.plot([n0, top], [1, top / n0], "--", color="grey", label="ideal")
            ax_speed.plot(xs, [r["speedup"] for r in rows], "o-", color="#219ebc", label="measured")
            where = {"textcoords": "offset points", "xytext": (0, 7), "ha": "center", "fontsize": 8}
            for r in rows:
                ax_speed.annotate(f"{r['efficiency']:.0%}", (r["devices"], r["speedup"]), **where)
            ax_speed.legend(fontsize=8, loc="upper left")
            ax_speed.set_xticks(counts)
            ax_speed.set_ylim(0, max(top / n0, *(r["speedup"] for r in rows)) * 1.15)
        ax_speed.set_xlabel("devices")
        ax_speed.set_ylabel(f"speed-up vs {min(counts) if counts else 1} device(s)")
        ax_speed.set_title(f"{self.scaling} scaling (labels: efficiency)", fontsize=10)
        fig.tight_layout()
        return fig

    def as_dict(self) -> dict:
        return {
            "format": FORMAT_VERSION,
            "scaling": self.scaling,
            "peak_flops_per_sec": self.peak_flops_per_sec,
            "results": [r.as_dict() for r in self.results],
        }

    def save(self, path: str) -> None:
        """Write the results as JSON, atomically (a crash never leaves half a file), readable
        as any file this process writes (its plot too). The folder must exist."""
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise ValueError(
                f"cannot save the results to {path}: the folder {directory} does not exist; "
                "create it first or choose another path."
            )
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".bench-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.as_dict(), f, indent=1)
                f.write("\n")
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600: as open() would instead
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str) -> Report:
        """Read results written by :meth:`save`."""
        with open(path) as f:
            values = json.load(f)
        if not isinstance(values, dict) or values.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"{path} is not a dpkit bench results file (format {FORMAT_VERSION}); write one "
                "with Report.save or `python -m dpkit bench --out FILE`."
            )
        results = [Result.from_dict(r) for r in values["results"]]
        return cls(results, values["scaling"], values["peak_flops_per_sec"])
