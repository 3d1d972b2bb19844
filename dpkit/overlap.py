"""Overlap and bucketing: the gradients all-reduced in several packs (lesson 10).

What TensorFlow 2.21 does, read in its source (``tensorflow/python/distribute/``):

* Keras 3's optimizer all-reduces the gradients with one call,
  ``replica_context.all_reduce(SUM, grads)`` and no options
  (``_all_reduce_sum_gradients`` in ``keras/src/backend/tensorflow/optimizer.py``); the
  strategy then uses its own options (``MirroredExtended._batch_reduce_to`` in
  ``mirrored_strategy.py`` merges them with the call's): for ``MultiWorkerMirroredStrategy``
  the ``communication_options`` given to its constructor. A custom step can pass
  ``options=`` to the replica context's ``all_reduce`` itself; a ``bytes_per_pack`` of 0 in
  the call does not override the constructor's (``Options.merge`` in ``collective_util.py``).
* ``CollectiveAllReduce._all_reduce`` (``cross_device_ops.py``) **reverses** the list of dense
  gradients (the last layer's come first out of the backward pass) and cuts it with
  ``cross_device_utils.group_by_size``: in order, a new pack starts once the current one
  holds *more* than ``bytes_per_pack`` bytes; ``bytes_per_pack=0`` (the default) gives one
  pack. :func:`group_by_size` is that rule on byte counts, :func:`all_reduce_packs` adds the
  reversal.
* ``CollectiveReplicaLauncher.batch_all_reduce`` (``cross_device_utils.py``) concatenates
  each pack into one flat tensor and launches one collective all-reduce per pack. Inside a
  ``tf.function`` each pack's all-reduce waits for its own gradients and, through the
  launcher's ordering token (one resource all its collectives take, so they run in launch
  order), for the pack before it, not for the rest of the backward pass: it may start while
  the backward pass still computes the earlier layers'. That is the overlap.

:func:`deep_mlp` is a model with several gradients of one size; :func:`make_exchange_step` is
the custom step that passes the options itself;
:func:`hidden_fraction` turns three measured times into the fraction of the exchange that
hid behind the compute, lesson 09's ``overlap`` (:mod:`dpkit.scaling`);
:func:`load` and :class:`Measured` read ``benchmarks/overlap_packs.py``'s result.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import keras
import tensorflow as tf
from keras import layers as kl

from dpkit.plumbing import checks


def tensor_bytes(tensors) -> list[int]:
    """The bytes of each tensor (or variable, Keras's too): its element count times its
    dtype's size."""
    sizes = []
    for t in tensors:
        count = tf.TensorShape(t.shape).num_elements()
        if count is None:
            raise ValueError(
                f"{t!r} has an unknown shape, and TensorFlow does not pack such tensors "
                "(group_by_size puts everything in one pack); give tensors of known shape."
            )
        sizes.append(count * tf.as_dtype(t.dtype).size)
    return sizes


def group_by_size(sizes, bytes_per_pack: int) -> list[list[int]]:
    """The packs TensorFlow's ``group_by_size`` makes of tensors of ``sizes`` bytes, as lists of
    positions in ``sizes``, in order: a pack closes once it holds more than
    ``bytes_per_pack`` bytes; ``bytes_per_pack=0`` puts everything in one pack."""
    bytes_per_pack = checks.whole(bytes_per_pack, "bytes_per_pack", 0, "e.g. 4 * 2**20")
    sizes = [checks.whole(s, "every size", 0, "bytes of each tensor") for s in sizes]
    if bytes_per_pack == 0:
        return [list(range(len(sizes)))]
    packs, held = [], 0
    for i, size in enumerate(sizes):
        if not packs or held > bytes_per_pack:
            packs.append([])
            held = 0
        packs[-1].append(i)
        held += size
    return packs


def all_reduce_packs(sizes, bytes_per_pack: int) -> list[list[int]]:
    """The packs a collective all-reduce of gradients of ``sizes`` bytes launches, in launch
    order, as positions in ``sizes``: the list reversed first, then :func:`group_by_size`."""
    last = len(sizes) - 1
    return [[last - i for i in pack] for pack in group_by_size(list(sizes)[::-1], bytes_per_pack)]


def deep_mlp(width: int = 1024, layers: int = 6, num_classes: int = 10):
    """A stack of ``layers`` ReLU layers of ``width`` units on inputs of ``width`` values, then
    the logits: ``layers`` kernels of ``width * width`` floats, as many gradients of the same
    size, which packs can split (``benchmarks/overlap_packs.py``'s model)."""
    width = checks.whole(width, "width", 1, "e.g. width=1024")
    layers = checks.whole(layers, "layers", 1, "e.g. layers=6")
    stack = [keras.Input((width,))]
    stack += [kl.Dense(width, activation="relu", name=f"dense{i + 1}") for i in range(layers)]
    stack.append(kl.Dense(checks.whole(num_classes, "num_classes", 2, "e.g. 10"), name="logits"))
    return keras.Sequential(stack, name="deep_mlp")


def make_exchange_step(
    strategy, model, loss_fn, global_batch: int, bytes_per_pack=0, learning_rate=None
):
    """A ``tf.function`` ``step(x, y)``: each replica computes its gradients of
    ``loss_fn(y, logits)`` (per-example losses) divided by ``global_batch``, all-reduces them
    with ``CommunicationOptions(bytes_per_pack=...)`` (``None``: no exchange, each replica
    keeps its own), and with a ``learning_rate`` takes a plain SGD step (``assign_sub``:
    variables made outside the strategy's scope, e.g. one per worker process under
    ``MultiWorkerMirroredStrategy``). Returns each replica's share of the loss."""
    global_batch = checks.whole(global_batch, "global_batch", 1, "e.g. global_batch=64")
    options = None
    if bytes_per_pack is not None:
        bytes_per_pack = checks.whole(bytes_per_pack, "bytes_per_pack", 0, "e.g. 4 * 2**20")
        options = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=bytes_per_pack)
    variables = model.trainable_variables

    def replica(x, y):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(
                loss_fn(y, model(x, training=True)), global_batch_size=global_batch
            )
        grads = tape.gradient(loss, variables)
        if options is not None:
            context = tf.distribute.get_replica_context()
            grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads, options=options)
        if learning_rate is not None:
            for v, g in zip(variables, grads):
                v.assign_sub(learning_rate * g)
        return loss

    @tf.function
    def step(x, y):
        return strategy.run(replica, args=(x, y))

    return step


def hidden_fraction(step_s: float, compute_s: float, exchange_s: float) -> float:
    """The fraction of the exchange that hid behind the compute: ``(compute + exchange -
    step) / exchange``. 0 when the step took compute plus exchange, 1 when it took the
    compute alone; noise can push a measured one outside 0..1."""
    for value, name in ((step_s, "step_s"), (compute_s, "compute_s")):
        checks.positive(value, name, "seconds of one step", "seconds")
    exchange_s = checks.positive(exchange_s, "exchange_s", "seconds of the exchange alone")
    return (compute_s + exchange_s - step_s) / exchange_s


def _spread(values) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


@dataclass
class Measured:
    """``benchmarks/overlap_packs.py``'s result: seconds per step, one value per round, of
    ``"compute"`` (one worker's share of the batch, no exchange), ``"step B"`` (two pinned
    workers, gradients all-reduced in packs of ``bytes_per_pack=B``; B=0: one pack) and
    ``"exchange B"`` (the same all-reduce alone).
    Each summary is ``(median, lowest, highest)`` over the rounds, each round's values
    measured back to back."""

    seconds: dict  # {setting: [seconds per step, one per round]}
    bytes_per_pack: list  # the settings measured, 0 first
    packs: dict  # {bytes_per_pack (str): packs launched, from the gradients' sizes}
    collective_ops: dict  # {"step B" or "exchange B": all-reduce ops in a worker's traced step}
    config: dict = field(default_factory=dict)  # model, batch, steps, rounds, machine
    path: str = ""

    def _rounds(self, b: int):
        s = self.seconds
        return zip(s[f"step {b}"], s["step 0"], s["compute"], s[f"exchange {b}"])

    def exposed(self, b: int) -> tuple[float, float, float]:
        """Seconds the exchange added to a step: ``step(B) - compute``."""
        return _spread([s - c for s, _, c, _ in self._rounds(b)])

    def saved(self, b: int) -> tuple[float, float, float]:
        """Seconds per step that packs of ``b`` saved over one pack: ``step(0) - step(B)``
        (negative: they cost)."""
        return _spread([one - s for s, one, _, _ in self._rounds(b)])

    def overlap(self, b: int) -> tuple[float, float, float]:
        """The fraction of the exchange in packs of ``b`` that hid behind the compute:
        :func:`hidden_fraction` of ``step(B)``, ``compute`` and ``exchange(B)``."""
        return _spread([hidden_fraction(s, c, e) for s, _, c, e in self._rounds(b)])

    def exchange_saved(self, b: int) -> tuple[float, float, float]:
        """Seconds that packs of ``b`` saved on the exchange alone: ``exchange(0) -
        exchange(B)``, paired per round."""
        pairs = zip(self.seconds["exchange 0"], self.seconds[f"exchange {b}"])
        return _spread([one - e for one, e in pairs])

    def median(self, setting: str) -> float:
        """The median over the rounds of ``setting`` (e.g. ``"compute"``, ``"step 0"``)."""
        return statistics.median(self.seconds[setting])

    def clear(self, b: int) -> bool:
        """Whether the saving of packs of ``b`` is larger than its spread: every round's
        saving has the same sign (and is not zero)."""
        _, low, high = self.saved(b)
        return low > 0 or high < 0

    def table(self) -> str:
        """One line per setting: medians and ranges in milliseconds."""
        ms = lambda t: "{:6.1f} [{:6.1f} to {:6.1f}]".format(*(1e3 * v for v in t))  # noqa: E731
        rows = [f"compute alone: {ms(_spread(self.seconds['compute']))} ms per step"]
        for b in self.bytes_per_pack:
            o, n = self.overlap(b), self.packs[str(b)]
            line = (
                f"bytes_per_pack {b:>10,} ({n} pack{'s' * (n != 1)}): "
                f"exchange alone {ms(_spread(self.seconds[f'exchange {b}']))}, "
                f"step {ms(_spread(self.seconds[f'step {b}']))}, exposed {ms(self.exposed(b))}, "
                f"overlap {o[0]:.2f} [{o[1]:.2f} to {o[2]:.2f}]"
            )
            if b:
                line += f", saved over one pack {ms(self.saved(b))}"
            rows.append(line)
        return "\n".join(rows)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "path"}


#: Where ``benchmarks/overlap_packs.py`` writes its result, from the repository's root.
RESULT = Path("benchmarks", "results", "overlap_packs.json")


def result_path() -> Path:
    """The committed result: beside this checkout's ``dpkit`` folder, else in the working
    folder or one of its parents (an installed dpkit, run from inside the checkout)."""
    here = Path.cwd().resolve()
    for root in (Path(__file__).resolve().parent.parent, here, *here.parents):
        if (root / RESULT).is_file():
            return root / RESULT
    return Path.cwd() / RESULT


def load(path=None) -> Measured:
    """Read a result ``benchmarks/overlap_packs.py`` wrote (default: :func:`result_path`)."""
    path = result_path() if path is None else Path(path)
    if not path.is_file():
        raise ValueError(
            f"{path} does not exist; run python benchmarks/overlap_packs.py --out {path} first."
        )
    data = json.loads(path.read_text())
    return Measured(
        data["seconds"],
        data["bytes_per_pack"],
        data["packs"],
        data["collective_ops"],
        data.get("config", {}),
        str(path),
    )
