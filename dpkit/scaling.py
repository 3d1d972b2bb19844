"""A cost model of one synchronous data-parallel training step (lesson 09).

Every device computes the gradients of its share of the batch, the devices exchange the
gradients, and every device applies the same update. The model adds up the time of each part:

* **compute**: ``per_device_batch * 3 * forward FLOPs per example / device FLOP/s`` (forward
  plus a backward pass of about twice the forward work), or ``per_device_batch / rate``
  when the one-device rate (examples/s) was measured;
* **communication**: an *alpha-beta* model of the gradient exchange, ``messages * alpha +
  bytes * beta``: alpha (``latency_s``) is paid per message, beta is one over the link's
  bandwidth (``bandwidth_bytes_per_s``). :func:`exchange` gives the time for each algorithm:

  ======================== ================================= ================================
  algorithm                bytes over the busiest link        messages (latency terms)
  ======================== ================================= ================================
  ``"ring"``               ``2 (N-1)/N * M``                  ``2 (N-1)``
  ``"parameter_server"``   ``2 M * max(1, W/k)`` (k servers,  ``2`` (push, pull)
                           W workers on their own machines)
  ``"hierarchical"``       ring inside each node of g        ``2 (g-1)`` + ``2 (nodes-1)``
                           devices, then a ring of the nodes
  ``"tree"``               ring inside each node, then        ``2 (g-1)`` + ``2 ceil(log2
                           ``2 M`` per node over a double     nodes)``
                           binary tree of the nodes (NCCL)
  ======================== ================================= ================================

  Shared capacity saturates as workers are added: ``host_total_bytes_per_s`` caps what all
  the devices of a node move to parameter servers on its CPU together (each gets at most
  ``total / N``), ``network_total_bytes_per_s`` what all the nodes move over the network
  (each node at most ``total / nodes``);

* **overlap**: the exchange of early layers' gradients can run while the backward pass is
  still computing later ones; ``overlap`` is the fraction of the exchange that may hide, at
  most behind the backward pass (two thirds of the compute).

* **fixed cost**: ``fixed_s`` is paid once by every step of more than one device
  (synchronising, launching the exchange), whatever the bytes or messages.

``step = compute + exchange - hidden + fixed``. Throughput is ``global batch / step``, speed-up is
throughput over one device's and efficiency is speed-up over ``N``. The names of every input
carry their unit (``_s``, ``_bytes``, ``_per_s``); :mod:`dpkit.cards` holds model and hardware
cards with their sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpkit import models
from dpkit.plumbing import checks

ALGORITHMS = ("ring", "parameter_server", "hierarchical", "tree")
#: the backward pass's share of the compute, what the exchange can hide behind
BACKWARD_SHARE = 2 / 3


def _number(value, name: str, example: str, *, zero: bool = False) -> float:
    if not checks.is_real(value) or math.isnan(value) or value < 0 or (value == 0 and not zero):
        what = "a number >= 0" if zero else "a positive number"
        raise ValueError(f"{name} must be {what}, got {value!r}; e.g. {example}.")
    return float(value)


@dataclass(frozen=True)
class ModelCard:
    """What the cost model needs to know about a model."""

    name: str  # how tables show it
    params: int  # trainable parameters (one gradient value each)
    forward_flops: float  # FLOPs of one example's forward pass (a multiply-add is 2)
    bytes_per_param: int = 4  # bytes of one gradient value (4 for float32)
    source: str = ""  # where the numbers come from

    def __post_init__(self):
        checks.whole(self.params, "params", 1, "params=25_557_032")
        _number(self.forward_flops, "forward_flops", "forward_flops=4.1e9")
        checks.whole(self.bytes_per_param, "bytes_per_param", 1, "4 for float32, 2 for float16")

    @property
    def gradient_bytes(self) -> int:
        """Bytes of one full set of gradients: what every step exchanges."""
        return self.params * self.bytes_per_param

    @property
    def train_flops(self) -> float:
        """FLOPs of one example's training step (forward and backward)."""
        return models.TRAINING_FLOPS_FACTOR * self.forward_flops


@dataclass(frozen=True)
class Link:
    """A connection in the alpha-beta model: ``seconds = messages * latency_s + bytes /
    bandwidth_bytes_per_s``."""

    latency_s: float
    bandwidth_bytes_per_s: float

    def __post_init__(self):
        _number(self.latency_s, "latency_s", "latency_s=5e-6 (5 microseconds)", zero=True)
        _number(self.bandwidth_bytes_per_s, "bandwidth_bytes_per_s", "12.5e9 for 100 Gbit/s")

    def seconds(self, nbytes: float, messages: float = 1) -> float:
        return messages * self.latency_s + nbytes / self.bandwidth_bytes_per_s


def gbit(gigabits_per_s: float) -> float:
    """Bytes/s of a link quoted in Gbit/s (network cards are sold in bits)."""
    return gigabits_per_s * 1e9 / 8


@dataclass(frozen=True)
class Hardware:
    """A cluster of identical devices, ``devices_per_node`` to a node."""

    name: str  # how tables show it
    device_flops_per_s: float  # FLOP/s one device *achieves* on training (not its peak)
    devices_per_node: int  # devices sharing the fast links of one node
    intra: Link  # the link between devices of one node (NVLink, PCIe, shared memory)
    inter: Link | None = None  # each node's link to the network (None: a single node)
    # each device's link to its node's CPU memory, where a parameter server on the node's CPU
    # keeps the variables (None: intra)
    host: Link | None = None
    source: str = ""  # where the numbers come from
    # what all of a node's devices move to and from its CPU together (None: no limit but
    # each device's host link) and what the network carries for all nodes together
    host_total_bytes_per_s: float | None = None
    network_total_bytes_per_s: float | None = None

    def __post_init__(self):
        _number(self.device_flops_per_s, "device_flops_per_s", "9.3e12 for a P100's fp32 peak")
        checks.whole(self.devices_per_node, "devices_per_node", 1, "devices_per_node=8")
        for name in ("host_total_bytes_per_s", "network_total_bytes_per_s"):
            if getattr(self, name) is not None:
                _number(getattr(self, name), name, f"{name}=40e9 (or None: no shared limit)")

    def nodes(self, devices: int) -> int:
        return -(-devices // self.devices_per_node)

    def link_between_nodes(self, nodes: int = 1) -> Link:
        """The network link of each node when ``nodes`` nodes share the network."""
        if self.inter is None:
            raise ValueError(
                f"{self.name} is a single node of {self.devices_per_node} devices; for more "
                "devices give the hardware card an inter-node link (inter=Link(...))."
            )
        return _shared(self.inter, self.network_total_bytes_per_s, nodes)

    def link_to_host(self, devices: int = 1) -> Link:
        """Each device's link to the CPU when ``devices`` devices use it at once."""
        return _shared(self.host or self.intra, self.host_total_bytes_per_s, devices)


def _shared(link: Link, total: float | None, users: int) -> Link:
    """``link`` with its bandwidth capped at ``total / users`` (``total`` None: no cap)."""
    if total is None or link.bandwidth_bytes_per_s * users <= total:
        return link
    return Link(link.latency_s, total / users)


@dataclass(frozen=True)
class Exchange:
    """The gradient exchange of one step: latency and bandwidth parts, in seconds."""

    latency_s: float
    bandwidth_s: float

    @property
    def seconds(self) -> float:
        return self.latency_s + self.bandwidth_s


def ring_bytes(devices: int, nbytes: float) -> float:
    """Bytes each device sends (and receives) in a ring all-reduce of ``nbytes``: ``2 (N-1)/N
    * M`` (a reduce-scatter, then an all-gather, each of ``N - 1`` steps of ``M / N``)."""
    checks.whole(devices, "devices", 1, "devices=8")
    return 2 * (devices - 1) / devices * _number(nbytes, "nbytes", "nbytes=4e6", zero=True)


def ps_bytes(workers: int, nbytes: float, servers: int = 1, *, colocated: bool = False) -> float:
    """Bytes through the busiest link when ``workers`` push ``nbytes`` of gradients to ``servers``
    parameter servers (each holding ``1/servers`` of the variables) and pull the update back.

    On machines of their own (``colocated=False``) a worker's link carries ``2 M`` and a
    server's ``2 M W / k``. Co-located with the workers (one server on ``k`` of the ``W``
    worker machines, as TensorFlow's benchmarks ran them), a machine's link carries ``2 M
    max(k - 1, W - 1) / k``: nothing crosses the network for its own shard.
    """
    checks.whole(workers, "workers", 1, "workers=8")
    checks.whole(servers, "servers", 1, "servers=2")
    m = _number(nbytes, "nbytes", "nbytes=4e6", zero=True)
    if colocated:
        if servers > workers:
            raise ValueError(
                f"{servers} co-located servers need as many worker machines; got {workers}: "
                "use servers <= workers or colocated=False."
            )
        return 2 * m * max(servers - 1, workers - 1) / servers
    return 2 * m * max(1, workers / servers)


def tree_bytes(nodes: int, nbytes: float) -> float:
    """Bytes each node sends (and receives) in a double binary tree all-reduce: ``2 M``
    (each of two trees reduces half of ``M`` up and broadcasts it down), 0 for one node."""
    checks.whole(nodes, "nodes", 1, "nodes=4")
    return 0.0 if nodes == 1 else 2 * _number(nbytes, "nbytes", "nbytes=4e6", zero=True)


def exchange(
    algorithm: str,
    devices: int,
    nbytes: float,
    hardware: Hardware,
    *,
    servers: int | None = None,
    colocated: bool = False,
) -> Exchange:
    """Time to all-reduce ``nbytes`` of gradients over ``devices`` devices of ``hardware``.

    ``"ring"`` is one flat ring over every device; once it leaves a node its slowest hop is
    the network link. ``"hierarchical"`` rings inside each node, then across the nodes
    (one node link each), then shares the result inside the node; ``"tree"`` does the same
    with a double binary tree across the nodes. ``"parameter_server"`` on one node sends
    each device's gradients to the CPU over the ``host`` link (``colocated``: to servers
    spread over the devices themselves, over ``intra``); across nodes each node first sums
    its devices' gradients (a ring inside the node), then is one worker of ``servers``
    parameter servers (default: one per node) over the network.
    """
    checks.one_of(algorithm, ALGORITHMS, "algorithm")
    checks.whole(devices, "devices", 1, "devices=8")
    m = _number(nbytes, "nbytes", "nbytes=4e6", zero=True)
    if devices == 1:
        return Exchange(0.0, 0.0)
    g, nodes = hardware.devices_per_node, hardware.nodes(devices)
    local = min(devices, g)
    intra = hardware.intra

    def ring_over(n, link, size):
        return Exchange(
            2 * (n - 1) * link.latency_s, ring_bytes(n, size) / link.bandwidth_bytes_per_s
        )

    if nodes == 1 and algorithm != "parameter_server":
        return ring_over(devices, intra, m)
    inter = hardware.link_between_nodes(nodes) if nodes > 1 else None
    if algorithm == "ring":
        return Exchange(
            2 * (devices - 1) * max(intra.latency_s, inter.latency_s),
            ring_bytes(devices, m) / min(intra.bandwidth_bytes_per_s, inter.bandwidth_bytes_per_s),
        )
    if algorithm in ("hierarchical", "tree"):
        inside = ring_over(local, intra, m)
        if algorithm == "hierarchical":
            across = ring_over(nodes, inter, m)
        else:
            hops = 2 * math.ceil(math.log2(nodes))
            across = Exchange(
                hops * inter.latency_s, tree_bytes(nodes, m) / inter.bandwidth_bytes_per_s
            )
        return Exchange(
            inside.latency_s + across.latency_s, inside.bandwidth_s + across.bandwidth_s
        )
    if nodes == 1 and colocated:  # variables spread over the devices: each serves 1/N
        moved = ps_bytes(devices, m, devices, colocated=True)
        return Exchange(2 * intra.latency_s, moved / intra.bandwidth_bytes_per_s)
    if nodes == 1:  # parameter server(s) on this node's CPU: each device has a host link
        host = hardware.link_to_host(devices)
        return Exchange(2 * host.latency_s, 2 * m / host.bandwidth_bytes_per_s)
    k = nodes if servers is None else servers
    checks.whole(k, "servers", 1, "servers=4")
    inside = ring_over(local, intra, m)
    across = ps_bytes(nodes, m, k, colocated=colocated) / inter.bandwidth_bytes_per_s
    return Exchange(inside.latency_s + 2 * inter.latency_s, inside.bandwidth_s + across)


def hidden_seconds(overlap, exchange_s, compute_s):
    """The part of the exchange hidden behind the backward pass: ``overlap`` of it, at most
    the backward pass (:data:`BACKWARD_SHARE` of the compute). Numbers or NumPy arrays."""
    return np.minimum(overlap * exchange_s, BACKWARD_SHARE * compute_s)


def step_seconds(compute_s, exchange_s, overlap=0.0, fixed_s=0.0):
    """``compute + exchange - hidden + fixed`` for numbers or NumPy arrays (broadcast): what
    :attr:`Step.seconds` is, for many parameter values at once."""
    return compute_s + exchange_s - hidden_seconds(overlap, exchange_s, compute_s) + fixed_s


@dataclass(frozen=True)
class Step:
    """The predicted time of one step on ``devices`` devices, in seconds."""

    devices: int
    per_device_batch: float
    compute_s: float
    exchange: Exchange
    hidden_s: float
    fixed_s: float = 0.0  # the fixed cost of a step of more than one device

    @property
    def exposed_s(self) -> float:
        """The part of the exchange not hidden behind the backward pass."""
        return self.exchange.seconds - self.hidden_s

    @property
    def seconds(self) -> float:
        return self.compute_s + self.exposed_s + self.fixed_s

    @property
    def examples_per_s(self) -> float:
        return self.devices * self.per_device_batch / self.seconds

    @property
    def parts(self) -> dict[str, float]:
        """Seconds of ``"compute"``, ``"bandwidth"``, ``"latency"`` (the exposed exchange
        split between its latency and bandwidth parts pro rata) and ``"fixed"``."""
        ex = self.exchange
        share = self.exposed_s / ex.seconds if ex.seconds else 0.0
        exposed = {"bandwidth": ex.bandwidth_s * share, "latency": ex.latency_s * share}
        return {"compute": self.compute_s, **exposed, "fixed": self.fixed_s}

    @property
    def dominant(self) -> str:
        """Which of :attr:`parts` costs most."""
        return max(self.parts, key=self.parts.get)


def step(
    model: ModelCard,
    hardware: Hardware,
    devices: int,
    per_device_batch: float,
    *,
    algorithm: str = "ring",
    overlap: float = 0.0,
    servers: int | None = None,
    colocated: bool = False,
    one_device_examples_per_s: float | None = None,
    fixed_s: float = 0.0,
) -> Step:
    """Predict one synchronous step of ``devices`` devices, each computing ``per_device_batch``
    examples (the terms: see the module docstring).

    ``overlap`` is the fraction (0..1) of the exchange that may run during the backward pass;
    ``servers`` and ``colocated`` are those of :func:`exchange`. A measured
    ``one_device_examples_per_s`` gives the compute time instead of FLOPs and
    ``device_flops_per_s``. ``fixed_s`` is paid by every step of more than one device.
    """
    checks.whole(devices, "devices", 1, "devices=8")
    fixed = _number(fixed_s, "fixed_s", "fixed_s=0.002 (2 ms a step)", zero=True)
    batch = _number(per_device_batch, "per_device_batch", "per_device_batch=64")
    overlap = _number(overlap, "overlap", "overlap=0.5", zero=True)
    if overlap > 1:
        raise ValueError(f"overlap is a fraction of the exchange, 0 to 1; got {overlap}.")
    if one_device_examples_per_s is None:
        compute = batch * model.train_flops / hardware.device_flops_per_s
    else:
        rate = _number(one_device_examples_per_s, "one_device_examples_per_s", "219.0")
        compute = batch / rate
    ex = exchange(
        algorithm, devices, model.gradient_bytes, hardware, servers=servers, colocated=colocated
    )
    hidden = float(hidden_seconds(overlap, ex.seconds, compute))
    return Step(devices, batch, compute, ex, hidden, fixed if devices > 1 else 0.0)


@dataclass
class Prediction:
    """Predicted steps for a list of device counts, with speed-up and efficiency.

    Speed-up and efficiency are relative to the first count (``base``), usually 1:
    ``speedup(n) = rate(n) / rate(base)``, ``efficiency(n) = speedup(n) * base / n``.
    """

    model: ModelCard
    hardware: Hardware
    algorithm: str
    scaling: str
    steps: list[Step] = field(default_factory=list)

    @property
    def base(self) -> Step:
        return self.steps[0]

    def at(self, devices: int) -> Step:
        for s in self.steps:
            if s.devices == devices:
                return s
        raise KeyError(
            f"no prediction for {devices} devices; have {[s.devices for s in self.steps]}"
        )

    def speedup(self, devices: int) -> float:
        return self.at(devices).examples_per_s / self.base.examples_per_s

    def efficiency(self, devices: int) -> float:
        return self.speedup(devices) * self.base.devices / devices

    def table(self) -> str:
        """One line per device count: step time and its parts, speed-up, efficiency."""
        lines = [
            f"{self.model.name} on {self.hardware.name}, {self.algorithm}, {self.scaling} scaling",
            f"{'devices':>7} {'batch/dev':>9} {'compute':>9} {'exchange':>9} {'hidden':>8} "
            f"{'step':>9} {'speed-up':>8} {'effic.':>6}  dominant",
        ]
        for s in self.steps:
            lines.append(
                f"{s.devices:>7} {s.per_device_batch:>9.4g} {_ms(s.compute_s):>9} "
                f"{_ms(s.exchange.seconds):>9} {_ms(s.hidden_s):>8} {_ms(s.seconds):>9} "
                f"{self.speedup(s.devices):>7.2f}x {self.efficiency(s.devices):>6.0%}  {s.dominant}"
            )
        return "\n".join(lines)

    def plot(self, axes=None):
        """Speed-up against devices (with the ideal line) and each count's step split into
        compute, exposed bandwidth and exposed latency. Returns the two axes."""
        import matplotlib.pyplot as plt

        if axes is None:
            _, axes = plt.subplots(1, 2, figsize=(11, 3.4))
        left, right = axes
        n = [s.devices for s in self.steps]
        left.plot(n, [self.speedup(d) for d in n], "o-", label="predicted")
        left.plot(n, [d / self.base.devices for d in n], "--", color="grey", label="ideal")
        left.set(xscale="log", yscale="log", xlabel="devices", ylabel="speed-up")
        left.set_title(f"{self.model.name}, {self.hardware.name}", fontsize=10)
        left.legend()
        bottom = [0.0] * len(n)
        for name in ("compute", "bandwidth", "latency", "fixed"):
            values = [s.parts[name] / s.seconds for s in self.steps]
            right.bar([str(d) for d in n], values, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, values)]
        right.set(xlabel="devices", ylabel="share of the step", ylim=(0, 1))
        right.legend(fontsize=8)
        return axes


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def predict(
    model: ModelCard,
    hardware: Hardware,
    devices,
    *,
    per_device_batch: float | None = None,
    global_batch: float | None = None,
    algorithm: str = "ring",
    overlap: float = 0.0,
    servers: int | None = None,
    colocated: bool = False,
    one_device_examples_per_s: float | None = None,
    fixed_s: float = 0.0,
) -> Prediction:
    """Predict steps for every count in ``devices`` (the first one is the base of the
    speed-ups, usually 1).

    Give ``per_device_batch`` for weak scaling (the batch per device stays fixed, the global
    batch grows) or ``global_batch`` for strong scaling (fixed global batch, each device
    takes ``global_batch / N``). The other arguments are those of :func:`step`; ``servers``
    may be a function of the node count (TensorFlow's benchmarks used as many as nodes).
    """
    counts = [devices] if checks.is_whole(devices) else list(devices)
    if not counts:
        raise ValueError("devices is empty; give the device counts, e.g. devices=[1, 2, 4, 8].")
    for n in counts:
        checks.whole(n, "every device count", 1, "devices=[1, 2, 4, 8]")
    if (per_device_batch is None) == (global_batch is None):
        raise ValueError(
            "give exactly one of per_device_batch (weak scaling: the batch per device stays "
            "fixed) and global_batch (strong scaling: the global batch is shared)."
        )
    if global_batch is not None:
        _number(global_batch, "global_batch", "global_batch=256")
    scaling = "weak" if global_batch is None else "strong"
    result = Prediction(model, hardware, algorithm, scaling)
    options = {"algorithm": algorithm, "overlap": overlap, "colocated": colocated}
    options |= {"one_device_examples_per_s": one_device_examples_per_s, "fixed_s": fixed_s}
    for n in counts:
        batch = per_device_batch if global_batch is None else global_batch / n
        k = servers(hardware.nodes(n)) if callable(servers) else servers
        result.steps.append(step(model, hardware, n, batch, servers=k, **options))
    return result
