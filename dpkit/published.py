"""Published scaling results (lesson 05 reads one table), and the cost model of
:mod:`dpkit.scaling` checked against them (lesson 09).

Each :class:`Setup` is one published measurement campaign: a hardware card from
:mod:`dpkit.cards`, the fraction of the exchange its software hid behind the backward pass,
and the parameters that were *fitted*. A fit picks one set of parameters per setup (never
per row) from a grid, minimising the error on the rows marked ``fit=True``; every other row
is a prediction the fit never saw.

Sources (figures as published; efficiencies are computed from the throughput tables):

* ``tf_benchmarks``: TensorFlow's performance benchmarks, May 2017 (tensorflow.org/performance/
  benchmarks, now ``site/en/r1/guide/performance/benchmarks.md`` in tensorflow/docs):
  synthetic ImageNet data, images/s on an NVIDIA DGX-1 (8 P100, NVLink) and on AWS
  p2.8xlarge instances (8 K80 each) with parameter servers on the worker machines.
* ``horovod``: Sergeev & Del Balso, "Horovod: fast and easy distributed deep learning in
  TensorFlow", arXiv:1802.05799 (2018), and Horovod's benchmark page: 128 servers of 4
  Pascal GPUs, 25 Gbit/s RoCE, tf_cnn_benchmarks with 64 images per GPU.
* ``goyal``: Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour",
  arXiv:1706.02677 (2017): ResNet-50, 32 images per GPU, 8 to 256 P100 GPUs (Big Basin
  servers of 8, 50 Gbit/s Ethernet), about 90% scaling efficiency from 8 to 256.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field, replace

from dpkit import cards, scaling


@dataclass(frozen=True)
class Row:
    """One published figure: ``efficiency`` of ``devices`` relative to ``base`` devices."""

    source: str
    setup: str
    model: str
    devices: int
    efficiency: float
    base: int = 1
    per_device_batch: int = 64
    algorithm: str = "ring"
    servers: int | None = None  # parameter servers at this size (None: one per node)
    one_device_examples_per_s: float | None = None  # the base rate, where published
    fit: bool = False


@dataclass(frozen=True)
class Setup:
    """A hardware card plus the software's overlap; ``grid`` lists the values a fit may try
    for each parameter (``intra_bw``, ``intra_lat``, ``inter_bw``, ``inter_lat``,
    ``host_bw`` in bytes/s and seconds, ``overlap`` as a fraction)."""

    name: str
    hardware: str
    overlap: float = 0.0
    colocated: bool = False
    grid: dict = field(default_factory=dict)
    note: str = ""


def _from_rates(source, setup, model, rates, *, fit_at=(), servers_at=None, **kw):
    """Rows from a published throughput table ``{devices: images/s}`` (first = base)."""
    base, *counts = rates
    one = rates[base] if base == 1 else None
    row = functools.partial(Row, source, setup, model, base=base, one_device_examples_per_s=one)
    servers, per_device = servers_at or {}, rates[base] / base
    return [
        row(n, rates[n] / n / per_device, servers=servers.get(n), fit=n in fit_at, **kw)
        for n in counts
    ]


GB, MS, US = 1e9, 1e-3, 1e-6
SETUPS = {
    "dgx1": Setup(
        "TensorFlow benchmarks, DGX-1",
        "dgx1",
        grid={
            "intra_bw": [g * GB for g in (10, 20, 30, 40, 60)],
            "intra_lat": [t * MS for t in (0.01, 1, 2, 3, 4, 5, 6, 8)],
            "host_bw": [g * GB for g in (4, 6, 8, 12, 16)],
            "overlap": [0, 0.25, 0.5, 0.75, 1.0],
        },
        note="parameter servers on the CPU for Inception/ResNet, NCCL rings for AlexNet/VGG",
    ),
    "k80_cluster": Setup(
        "TensorFlow benchmarks, AWS K80 cluster",
        "k80_10gbe",
        colocated=True,
        grid={
            "intra_bw": [g * GB for g in (2, 4, 6, 8)],
            "intra_lat": [t * MS for t in (0.01, 1, 3)],
            "inter_bw": [g * GB for g in (0.6, 0.8, 1.0, 1.1, 1.25)],  # at most 10 Gbit/s
            "inter_lat": [t * MS for t in (0.05, 1, 5, 20)],
            "overlap": [i / 10 for i in range(11)],
        },
        note="parameter servers on the worker machines (distributed_replicated)",
    ),
    "horovod": Setup(
        "Horovod, 512 GPUs over RoCE",
        "p100_roce25",
        grid={
            "inter_lat": [t * US for t in (1, 5, 10, 20, 50, 100)],
            "overlap": [i / 10 for i in range(11)],
        },
        note="one ring over every GPU (NCCL 2), 25 Gbit/s as sold",
    ),
    "goyal": Setup(
        "Goyal et al., 256 GPUs",
        "bigbasin_50gbe",
        overlap=0.5,
        note="not fitted: data-sheet links, half the exchange hidden (as Horovod's fit found)",
    ),
}

TF_DGX1 = {  # images/s, synthetic data, batch 64 per GPU (AlexNet 512)
    "inception_v3": {1: 142, 2: 284, 4: 569, 8: 1131},
    "resnet50": {1: 219, 2: 422, 4: 852, 8: 1734},
    "resnet152": {1: 91.8, 2: 181, 4: 356, 8: 716},
    "alexnet": {1: 2987, 2: 5658, 4: 10509, 8: 17822},
    "vgg16": {1: 154, 2: 295, 4: 584, 8: 1081},
}
TF_K80_CLUSTER = {  # images/s, synthetic data, 8 GPUs per p2.8xlarge
    "inception_v3": {1: 29.7, 8: 229, 16: 459, 32: 902, 64: 1783},
    "resnet50": {1: 52.4, 8: 378, 16: 751, 32: 1388, 64: 2744},
    "resnet152": {1: 19.4, 8: 146, 16: 291, 32: 565, 64: 981},
}


def rows() -> list[Row]:
    """Every published figure the lesson compares with, fit rows marked."""
    out = []
    for model, rates in TF_DGX1.items():
        algorithm = "ring" if model in ("alexnet", "vgg16") else "parameter_server"
        batch = 512 if model == "alexnet" else 64
        dgx1 = {"per_device_batch": batch, "algorithm": algorithm, "fit_at": (2, 4)}
        out += _from_rates("tf_benchmarks", "dgx1", model, rates, **dgx1)
    for model, rates in TF_K80_CLUSTER.items():
        batch = 32 if model == "resnet152" else 64
        servers = {64: {"inception_v3": 6, "resnet152": 4}.get(model)}
        k80 = {"per_device_batch": batch, "servers_at": servers, "fit_at": (8, 16)}
        out += _from_rates(
            "tf_benchmarks", "k80_cluster", model, rates, algorithm="parameter_server", **k80
        )
    horovod = functools.partial(Row, "horovod", "horovod")
    out += [
        horovod("inception_v3", 512, 0.90, one_device_examples_per_s=142, fit=True),
        horovod("vgg16", 512, 0.68, one_device_examples_per_s=154, fit=True),
        horovod("resnet101", 512, 0.90),
    ]
    # Not published by Goyal et al.: an assumed one-P100 rate at 32 images (195), a little
    # under the DGX-1 table's 219 at 64 (smaller batches run less efficiently).
    goyal = {"base": 8, "per_device_batch": 32, "algorithm": "hierarchical"}
    out.append(Row("goyal", "goyal", "resnet50", 256, 0.90, one_device_examples_per_s=195, **goyal))
    return out


def hardware_with(setup: Setup, params: dict) -> scaling.Hardware:
    """The setup's hardware card with ``params`` (see :class:`Setup`) put in."""
    hw = cards.HARDWARE[setup.hardware]
    links = {"intra": hw.intra, "inter": hw.inter, "host": hw.host}
    for key, value in params.items():
        if key == "overlap":
            continue
        name, what = key.split("_")
        link = links[name] or hw.intra
        field_name = "bandwidth_bytes_per_s" if what == "bw" else "latency_s"
        links[name] = replace(link, **{field_name: value})
    return replace(hw, **links)


def predict_row(row: Row, setup: Setup, params: dict) -> float:
    """The cost model's efficiency for one published row under ``params``."""
    hw, model = hardware_with(setup, params), cards.model_card(row.model)
    options = {"per_device_batch": row.per_device_batch, "algorithm": row.algorithm}
    options |= {"overlap": params.get("overlap", setup.overlap), "colocated": setup.colocated}
    options |= {"servers": row.servers, "one_device_examples_per_s": row.one_device_examples_per_s}
    prediction = scaling.predict(model, hw, [row.base, row.devices], **options)
    return prediction.efficiency(row.devices)


def fit(setup_key: str, fit_rows: list[Row]) -> dict:
    """The grid point with the least squared error over ``fit_rows`` (empty grid: ``{}``)."""
    setup = SETUPS[setup_key]
    if not setup.grid or not fit_rows:
        return {}
    names = list(setup.grid)
    best, best_error = {}, math.inf
    for values in itertools.product(*(setup.grid[n] for n in names)):
        params = dict(zip(names, values))
        error = sum((predict_row(r, setup, params) - r.efficiency) ** 2 for r in fit_rows)
        if error < best_error:
            best, best_error = params, error
    return best


@dataclass
class Comparison:
    """Every published row with the model's prediction, after one fit per setup."""

    rows: list[Row]
    predicted: list[float]
    params: dict  # setup key -> fitted parameters

    def errors(self) -> list[float]:
        """Predicted minus published efficiency, in percentage points."""
        return [100 * (p - r.efficiency) for r, p in zip(self.rows, self.predicted)]

    def held_out(self) -> list[int]:
        return [i for i, r in enumerate(self.rows) if not r.fit]

    def table(self) -> str:
        head = (
            f"{'setup':22} {'model':13} {'devices':>9} {'published':>9} {'model':>6} {'error':>6}"
        )
        lines = [f"{head}  used"]
        for r, p, e in zip(self.rows, self.predicted, self.errors()):
            span = f"{r.base}->{r.devices}"
            lines.append(
                f"{SETUPS[r.setup].name[:22]:22} {cards.DISPLAY[r.model]:13} {span:>9} "
                f"{r.efficiency:>9.1%} {p:>6.1%} {e:>+6.1f}  {'fit' if r.fit else 'held out'}"
            )
        return "\n".join(lines)


def compare() -> Comparison:
    """Fit each setup on its fit rows, then predict every row."""
    all_rows = rows()
    params = {key: fit(key, [r for r in all_rows if r.setup == key and r.fit]) for key in SETUPS}
    predicted = [predict_row(r, SETUPS[r.setup], params[r.setup]) for r in all_rows]
    return Comparison(all_rows, predicted, params)
