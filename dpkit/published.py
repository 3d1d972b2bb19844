"""Published scaling results, and the cost model of :mod:`dpkit.scaling` checked against
them (lesson 09; lesson 05 reads one table from :mod:`dpkit.published_tables`).

Each :class:`Setup` is one published measurement campaign: a hardware card from
:mod:`dpkit.cards`, the fraction of the exchange its software hid behind the backward pass,
and the parameters that were *fitted*. A fit picks one set of parameters per setup (never
per row) from a grid, minimising the error on the rows marked ``fit=True``; every other row
is a prediction the fit never saw.

The split, fixed before any fit was run: in every series (one model on one setup) the rows
at the two smallest device counts above the base are *fit* rows, every larger count is
*held out*. Horovod's page publishes one count (512), so its three rows are all fit rows:
the lesson uses them to show what a fit on them can and cannot tell apart, and scores none.
Goyal et al.'s one figure (90% from 8 to 256 GPUs) is not a row: predicting it needs a
one-GPU rate and an overlap the paper does not publish.

Later collections (:mod:`dpkit.published_tables`, :data:`NEW_SETUPS`) came after the
lesson's split had been scored, each split before any fit on it: DLPerf's ResNet-50 tables on
V100 servers over InfiniBand, a set scored first and a final set put aside (``compare("second")``,
``compare("final")``), Lambda's PCIe servers, the third set (``compare("third")``), and CSC's
GPU clusters, the fourth set, with held-out rows on two nodes (``compare("fourth")``).

The lesson's sources are described in :mod:`dpkit.published_tables`, beside their tables; what a
fit may try, within each hardware card, is :mod:`dpkit.published_grid`.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, replace

import numpy as np

from dpkit import cards, scaling
from dpkit.published_grid import (  # noqa: F401  (what a fit may try, read as published.grid ...)
    PARAMETERS,
    TOLERANCE,
    card_value,
    check,
    departure,
    grid,
    hardware_with,
)
from dpkit.published_tables import (  # noqa: F401  (the tables, read as published.TF_DGX1 ...)
    CSC,
    CSC_BATCH,
    DLPERF,
    DLPERF_BATCH,
    FINAL_SET,
    FOURTH_SET,
    LAMBDA,
    SECOND_SET,
    SERVERS_AT_64,
    TF_AWS_K80,
    TF_DGX1,
    TF_DGX1_B32,
    TF_GCE_K80,
    TF_K80_CLUSTER,
    TF_K80_CLUSTER_B32,
    THIRD_SET,
)

#: fit rows per series: the smallest device counts above the base (the rest are held out)
FIT_COUNTS = 2


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
    # parameter servers on the workers' own devices (None: as the setup says)
    colocated: bool | None = None
    one_device_examples_per_s: float | None = None  # the base rate, where published
    fit: bool = False


@dataclass(frozen=True)
class Setup:
    """A hardware card, how its servers sit, and which :data:`PARAMETERS` a fit may set (the
    values it tries: :func:`grid`)."""

    name: str
    hardware: str
    colocated: bool = False
    fitted: tuple = ()
    note: str = ""


def _from_rates(source, setup, model, rates, *, servers_at=None, **kw):
    """Rows from a published throughput table ``{devices: images/s}`` (first = base); the
    :data:`FIT_COUNTS` smallest counts above the base are fit rows."""
    base, *counts = rates
    fit_at = sorted(counts)[:FIT_COUNTS]
    one = rates[base] if base == 1 else None
    row = functools.partial(Row, source, setup, model, base=base, one_device_examples_per_s=one)
    servers, per_device = servers_at or {}, rates[base] / base
    return [
        row(n, rates[n] / n / per_device, servers=servers.get(n), fit=n in fit_at, **kw)
        for n in counts
    ]


ONE_NODE = ("host_bw", "host_total", "intra_bw", "intra_lat", "overlap", "fixed")
CLUSTER = ("intra_bw", "inter_bw", "inter_lat", "net_total", "overlap", "fixed")
RING = ("intra_bw", "intra_lat", "overlap", "fixed")
SETUPS = {
    "dgx1": Setup(
        "TF benchmarks, DGX-1", "dgx1", fitted=ONE_NODE, note="servers on the CPU or NCCL"
    ),
    "dgx1_b32": Setup("TF benchmarks, DGX-1, batch 32", "dgx1", fitted=ONE_NODE, note="as dgx1"),
    "gce_k80": Setup(
        "TF benchmarks, GCE 8 K80", "k80_gce", fitted=ONE_NODE, note="servers on the CPU"
    ),
    "aws_k80": Setup(
        "TF benchmarks, AWS 8 K80",
        "k80_10gbe",
        fitted=ONE_NODE,
        note="Inception: servers on the CPU; others: variables spread over the GPUs",
    ),
    "k80_cluster": Setup(
        "TF benchmarks, K80 cluster",
        "k80_10gbe",
        colocated=True,
        fitted=CLUSTER,
        note="parameter servers on the worker machines (distributed_replicated)",
    ),
    "k80_cluster_b32": Setup(
        "TF benchmarks, K80 cluster, batch 32",
        "k80_10gbe",
        colocated=True,
        fitted=CLUSTER,
        note="as k80_cluster, 32 per GPU",
    ),
    "horovod": Setup(
        "Horovod, 512 GPUs over RoCE",
        "p100_roce25",
        fitted=("inter_bw", "inter_lat", "overlap", "fixed"),
        note="one ring over every GPU (NCCL 2), 25 Gbit/s as sold; fit rows only",
    ),
}
#: the setups that came after the lesson's split was scored (:mod:`dpkit.published_tables`),
#: apart from :data:`SETUPS` so the lesson's table stays the one its split was fixed on:
#: DLPerf's (NCCL rings over every GPU, fitted as clusters of the card ``v100_ib100``),
#: Lambda's (NCCL rings inside one server of PCIe GPUs: only the link inside the node is used)
#: and CSC's (PyTorch DDP rings over every GPU, fitted as clusters of each cluster's card)
NEW_SETUPS = (
    {
        key: Setup(f"DLPerf, {short}", "v100_ib100", fitted=CLUSTER, note=name)
        for key, (name, _, _) in DLPERF.items()
        for short in [name.split(" (")[0].split(",")[0]]
    }
    | {
        key: Setup(
            f"Lambda, {name.split(',')[0]}", f"{key.split('_')[1]}_pcie", fitted=RING, note=name
        )
        for key, (name, _) in LAMBDA.items()
    }
    | {
        key: Setup(name, hardware, fitted=CLUSTER, note=f"PyTorch {torch} DDP")
        for key, (name, hardware, torch, _) in CSC.items()
    }
)


def setup_of(key: str) -> Setup:
    """The setup called ``key``, the lesson's (:data:`SETUPS`) or DLPerf's (:data:`NEW_SETUPS`)."""
    if key not in (known := SETUPS | NEW_SETUPS):
        raise ValueError(f"no setup {key!r}; choose from {', '.join(known)}.")
    return known[key]


def new_rows(which: str) -> list[Row]:
    """The rows of ``which``: DLPerf's "second" (:data:`SECOND_SET`, scored first) or "final"
    (:data:`FINAL_SET`, the test set aside), Lambda's "third" (:data:`THIRD_SET`) or CSC's
    "fourth" (:data:`FOURTH_SET`), fit rows marked as :func:`rows` marks them."""
    if which not in ("second", "final", "third", "fourth"):
        raise ValueError(f"which={which!r}: use 'second', 'final', 'third' or 'fourth'.")
    if which == "fourth":
        kw = {"per_device_batch": CSC_BATCH, "algorithm": "ring"}
        return [
            row
            for key in FOURTH_SET
            for row in _from_rates("csc", key, "resnet50", CSC[key][3], **kw)
        ]
    if which == "third":
        return [
            row
            for key in THIRD_SET
            for model, (batch, rates) in LAMBDA[key][1].items()
            for row in _from_rates("lambda", key, model, rates, per_device_batch=batch)
        ]
    kw = {"per_device_batch": DLPERF_BATCH, "algorithm": "ring"}
    keys = SECOND_SET if which == "second" else FINAL_SET
    return [
        row for key in keys for row in _from_rates("dlperf", key, "resnet50", DLPERF[key][2], **kw)
    ]


def rows() -> list[Row]:
    """Every published figure the lesson compares with, fit rows marked."""
    out = []
    for setup, table, batch in (("dgx1", TF_DGX1, 64), ("dgx1_b32", TF_DGX1_B32, 32)):
        for model, rates in table.items():
            kw = {"per_device_batch": 512 if model == "alexnet" else batch}
            kw["algorithm"] = "ring" if model in ("alexnet", "vgg16") else "parameter_server"
            out += _from_rates("tf_benchmarks", setup, model, rates, **kw)
    for setup, table in (("gce_k80", TF_GCE_K80), ("aws_k80", TF_AWS_K80)):
        for model, rates in table.items():
            batch = {"alexnet": 512, "resnet152": 32, "vgg16": 32}.get(model, 64)
            spread = setup == "aws_k80" and model != "inception_v3"
            kw = {"per_device_batch": batch, "colocated": spread}
            out += _from_rates(
                "tf_benchmarks", setup, model, rates, **kw, algorithm="parameter_server"
            )
    for setup, table in (("k80_cluster", TF_K80_CLUSTER), ("k80_cluster_b32", TF_K80_CLUSTER_B32)):
        for model, rates in table.items():
            batch = 32 if model == "resnet152" or setup.endswith("b32") else 64
            at_64 = 4 if (setup, model) == ("k80_cluster_b32", "resnet50") else None
            servers = {64: at_64 or SERVERS_AT_64.get(model)}
            kw = {"per_device_batch": batch, "servers_at": servers}
            out += _from_rates(
                "tf_benchmarks", setup, model, rates, **kw, algorithm="parameter_server"
            )
    # Horovod's page gives efficiencies, not rates; the one-P100 rates of Inception V3 and
    # VGG-16 are the DGX-1 table's (ResNet-101's compute comes from the card's FLOP/s)
    horovod = functools.partial(Row, "horovod", "horovod", fit=True)
    out += [
        horovod("inception_v3", 512, 0.90, one_device_examples_per_s=142),
        horovod("vgg16", 512, 0.68, one_device_examples_per_s=154),
        horovod("resnet101", 512, 0.90),
    ]
    return out


def _options(row: Row, setup: Setup) -> dict:
    colocated = setup.colocated if row.colocated is None else row.colocated
    options = {"per_device_batch": row.per_device_batch, "algorithm": row.algorithm}
    options |= {"servers": row.servers, "one_device_examples_per_s": row.one_device_examples_per_s}
    return options | {"colocated": colocated}


def predict_row(row: Row, setup: Setup, params: dict) -> float:
    """The cost model's efficiency for one published row under ``params``."""
    hw, model = hardware_with(setup, params), cards.model_card(row.model)
    options = _options(row, setup) | {"overlap": params.get("overlap", 0.0)}
    options["fixed_s"] = params.get("fixed", 0.0)
    prediction = scaling.predict(model, hw, [row.base, row.devices], **options)
    return prediction.efficiency(row.devices)


def predictions(setup_key: str, rows_: list[Row]) -> tuple[list[dict], np.ndarray]:
    """Every point of the setup's :func:`grid` and the efficiency it predicts for each row
    (shape: rows x points): as :func:`predict_row`, with overlap and fixed cost applied to
    all their values at once (:func:`dpkit.scaling.step_seconds`)."""
    setup = setup_of(setup_key)
    values = grid(setup)
    links = [n for n in values if n not in ("overlap", "fixed")]
    overlap = np.array(values.get("overlap", [0.0]))[:, None]
    fixed = np.array(values.get("fixed", [0.0]))[None, :]
    points, blocks = [], []
    for combo in itertools.product(*(values[n] for n in links)):
        params = dict(zip(links, combo))
        hw = hardware_with(setup, params)
        block = []
        for r in rows_:
            seconds = []
            for n in (r.base, r.devices):
                options = _options(r, setup)
                batch = options.pop("per_device_batch")
                s = scaling.step(cards.model_card(r.model), hw, n, batch, **options)
                paid = fixed if n > 1 else 0.0
                seconds.append(scaling.step_seconds(s.compute_s, s.exchange.seconds, overlap, paid))
            block.append((seconds[0] / seconds[1]).ravel())  # weak scaling: t(base) / t(N)
        blocks.append(np.array(block).reshape(len(rows_), -1))
        for o, f in itertools.product(overlap.ravel(), fixed.ravel()):
            extra = {"overlap": float(o)} if "overlap" in values else {}
            points.append(params | extra | ({"fixed": float(f)} if "fixed" in values else {}))
    return points, np.concatenate(blocks, axis=1)


@dataclass
class Fit:
    """One setup's fit: the best grid point and every point within :data:`TOLERANCE`."""

    best: dict
    consistent: list[dict]
    rms: float  # the best point's RMS error over the fit rows


#: how a fit chooses among grid points that fit its rows equally well (within :data:`TIE`):
#: "card" (the default since issue 32's final test), the one nearest the card
#: (:func:`departure`): a parameter the fit rows cannot see (the network, when every fit row
#: is inside one server) keeps the hardware's value; "first", the grid's first point (the
#: rule lesson 09 was first scored with, kept for its comparison)
TIES = ("first", "card")
TIE = 1e-12


def fit_setup(
    setup_key: str, rows_: list[Row], ties: str = "card"
) -> tuple[Fit, np.ndarray, np.ndarray]:
    """Fit on the rows marked ``fit``; returns the fit and, for every row, the best point's
    prediction and the (low, high) band of the consistent points (shape: rows x 2). ``ties``
    chooses among equally good points (:data:`TIES`)."""
    if ties not in TIES:
        raise ValueError(f"ties={ties!r}: use one of {', '.join(TIES)}.")
    points, table = predictions(setup_key, rows_)
    used = np.array([r.fit for r in rows_])
    published = np.array([r.efficiency for r in rows_])
    rms = np.sqrt(np.mean((table[used] - published[used, None]) ** 2, axis=0))
    best = int(np.argmin(rms))
    if ties == "card":
        tied = np.flatnonzero(rms <= rms[best] + TIE)
        setup = setup_of(setup_key)
        best = int(min(tied, key=lambda i: departure(setup, points[i])))
    ok = np.flatnonzero(rms <= rms[best] + TOLERANCE)
    band = np.stack([table[:, ok].min(axis=1), table[:, ok].max(axis=1)], axis=1)
    fitted = Fit(points[best], [points[i] for i in ok], float(rms[best]))
    return fitted, table[:, best], band


def fit(setup_key: str, fit_rows: list[Row]) -> dict:
    """The grid point with the least squared error over ``fit_rows``."""
    return fit_setup(setup_key, [replace(r, fit=True) for r in fit_rows])[0].best


def hold(rows_: list[Row]) -> list[float]:
    """The "hold the last fitted efficiency" baseline: for each row, the published efficiency
    at the largest fit count of its series (same setup and model)."""
    last = {}
    for r in rows_:
        key = (r.setup, r.model)
        if r.fit and (key not in last or r.devices > last[key].devices):
            last[key] = r
    missing = sorted({(r.setup, r.model) for r in rows_} - set(last))
    if missing:
        raise ValueError(f"series with no fit row, nothing to hold: {missing}.")
    return [last[r.setup, r.model].efficiency for r in rows_]


def score(errors_in_points) -> tuple[float, float]:
    """Median absolute error (points) and the share of errors within 10 points."""
    e = np.abs(np.asarray(errors_in_points, dtype=float))
    if e.size == 0:
        raise ValueError("no errors to score: give at least one row.")
    return float(np.median(e)), float(np.mean(e <= 10))


@dataclass
class Comparison:
    """Every published row with the model's prediction and band, after one fit per setup."""

    rows: list[Row]
    predicted: list[float]
    band: list[tuple[float, float]]  # (low, high) over the consistent parameter sets
    fits: dict  # setup key -> Fit

    @property
    def params(self) -> dict:
        """Setup key -> the best fitted parameters."""
        return {key: f.best for key, f in self.fits.items()}

    def errors(self) -> list[float]:
        """Predicted minus published efficiency, in percentage points."""
        return [100 * (p - r.efficiency) for r, p in zip(self.rows, self.predicted)]

    def held_out(self) -> list[int]:
        return [i for i, r in enumerate(self.rows) if not r.fit]

    def scores(self) -> dict:
        """On the held-out rows: (median error, share within 10 points) of the model, of
        "linear" (100% efficiency) and of "hold" (:func:`hold`)."""
        held = self.held_out()
        published = np.array([self.rows[i].efficiency for i in held])
        kept = hold(self.rows)
        guesses = {
            "model": np.array([self.predicted[i] for i in held]),
            "linear": np.ones(len(held)),
            "hold": np.array([kept[i] for i in held]),
        }
        return {name: score(100 * (g - published)) for name, g in guesses.items()}

    def table(self) -> str:
        head = (
            f"{'setup':22} {'model':13} {'devices':>7} {'published':>9} {'model':>6} {'band':>11}"
        )
        lines = [f"{head} {'error':>6}  used"]
        for r, p, (lo, hi), e in zip(self.rows, self.predicted, self.band, self.errors()):
            span = f"{r.base}->{r.devices}"
            lines.append(
                f"{setup_of(r.setup).name[:22]:22} {cards.DISPLAY[r.model]:13} {span:>7} "
                f"{r.efficiency:>9.1%} {p:>6.1%} {lo:>5.0%}-{hi:<5.0%} {e:>+6.1f}  "
                f"{'fit' if r.fit else 'held out'}"
            )
        return "\n".join(lines)


def compare(which: str = "lesson", ties: str = "card") -> Comparison:
    """Fit each setup on its fit rows, then predict every row, with its band: the lesson's
    rows (:func:`rows`) or the "second", "final", "third" or "fourth" set (:func:`new_rows`);
    ``ties`` as :func:`fit_setup`'s."""
    all_rows = rows() if which == "lesson" else new_rows(which)
    predicted, band, fits = [0.0] * len(all_rows), [(0.0, 0.0)] * len(all_rows), {}
    for key in dict.fromkeys(r.setup for r in all_rows):
        index = [i for i, r in enumerate(all_rows) if r.setup == key]
        fits[key], best, low_high = fit_setup(key, [all_rows[i] for i in index], ties)
        for j, i in enumerate(index):
            predicted[i], band[i] = float(best[j]), tuple(map(float, low_high[j]))
    return Comparison(all_rows, predicted, band, fits)


def beyond(comparison: Comparison) -> list[bool]:
    """For each row: is it held out on more servers (nodes of its setup's hardware card) than
    the largest fit row of its series? Lesson 09's split: *beyond the fitted servers*."""
    rows = comparison.rows
    nodes = [cards.HARDWARE[setup_of(r.setup).hardware].nodes(r.devices) for r in rows]
    fitted = {}
    for r, n in zip(rows, nodes):
        if r.fit:
            fitted[r.setup, r.model] = max(fitted.get((r.setup, r.model), 0), n)
    missing = sorted({(r.setup, r.model) for r in rows} - set(fitted))
    if missing:
        raise ValueError(f"series with no fit row, nothing to compare with: {missing}.")
    return [not r.fit and n > fitted[r.setup, r.model] for r, n in zip(rows, nodes)]


SIDES = ("all", "beyond", "inside")


def pool(comparisons: list[Comparison], side: str = "all") -> Comparison:
    """Several comparisons as one: every fit row, and the held-out rows on ``side`` of
    :func:`beyond`'s split ("beyond" the fitted servers, "inside" them, or "all")."""
    if side not in SIDES:
        raise ValueError(f"side={side!r}: use one of {', '.join(SIDES)}.")
    if not comparisons:
        raise ValueError("no comparisons to pool: give at least one (published.compare(...)).")
    keys = [key for c in comparisons for key in c.fits]
    if len(keys) != len(set(keys)):
        raise ValueError("the comparisons share a setup; pool each set of setups once.")
    kept = [
        (r, p, b)
        for c in comparisons
        for r, p, b, out in zip(c.rows, c.predicted, c.band, beyond(c))
        if r.fit or side == "all" or out == (side == "beyond")
    ]
    fits = {key: f for c in comparisons for key, f in c.fits.items()}
    return Comparison(*(list(x) for x in zip(*kept)), fits)
