"""Datasets that work offline, as ``tf.data`` pipelines.

Introduced in lesson 01. The default everywhere is ``"digits"``: scikit-learn's
1,797 handwritten digits (8x8, shipped inside the package, so no download),
scaled up to the MNIST layout: the digit fills a 20x20 box centred in a 28x28
image. The sources' LeNet-5 and MLP then apply unchanged.

MNIST, Fashion-MNIST and CIFAR-10 come through the Keras loaders when they are
in the Keras cache (``~/.keras/datasets``) or the network allows a download.
:func:`synthetic` makes random tensors of any shape for throughput runs.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

import keras
import numpy as np
import tensorflow as tf

from dpkit.plumbing import checks

_KERAS = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_CIFAR = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
#: name -> (Keras loader module, file or folder in the Keras cache, download address)
KERAS_DATASETS = {
    "mnist": ("mnist", "mnist.npz", _KERAS + "mnist.npz"),
    "fashion_mnist": ("fashion_mnist", "fashion-mnist", _KERAS),
    "cifar10": ("cifar10", "cifar-10-batches-py", _CIFAR),
}
NAMES = ("digits", *KERAS_DATASETS)

#: A network that drops packets would otherwise hang a download for hours. This bounds
#: each blocking read, not the whole download, so a slow but live connection still works.
DOWNLOAD_SOCKET_TIMEOUT_SECONDS = 30


class DatasetUnavailableError(RuntimeError):
    """A dataset is neither cached nor downloadable; the message says what to do."""


@dataclass(frozen=True)
class Arrays:
    """A dataset as NumPy arrays: images in [0, 1], float32, NHWC; labels int32; a readable
    name per label in ``class_names``."""

    name: str
    x_train: np.ndarray = field(repr=False)
    y_train: np.ndarray = field(repr=False)
    x_test: np.ndarray = field(repr=False)
    y_test: np.ndarray = field(repr=False)
    num_classes: int = 10
    class_names: tuple[str, ...] = ()

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    def __repr__(self) -> str:
        return (
            f"Arrays({self.name!r}: train {self.x_train.shape}, test {self.x_test.shape}, "
            f"{self.num_classes} classes)"
        )


def _resize_bilinear(images: np.ndarray, size: int) -> np.ndarray:
    """Resize square images (N, h, h) to (N, size, size) by bilinear interpolation."""
    h = images.shape[1]
    # Sample at pixel centres so the picture is not shifted by half a pixel.
    coords = (np.arange(size) + 0.5) * h / size - 0.5
    coords = np.clip(coords, 0, h - 1)
    lo = np.floor(coords).astype(int)
    hi = np.minimum(lo + 1, h - 1)
    frac = (coords - lo).astype(np.float32)
    rows = images[:, lo, :] * (1 - frac)[None, :, None] + images[:, hi, :] * frac[None, :, None]
    return rows[:, :, lo] * (1 - frac)[None, None, :] + rows[:, :, hi] * frac[None, None, :]


def _digits(seed: int, test_fraction: float) -> Arrays:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    images = bunch.images.astype(np.float32) / 16.0  # pixel values are 0..16
    box = _resize_bilinear(images, 20)
    padded = np.zeros((len(images), 28, 28), np.float32)
    padded[:, 4:24, 4:24] = box  # MNIST puts a 20x20 digit in the centre of 28x28
    x = padded[..., None]
    y = bunch.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    return Arrays("digits", x_train, y_train, x_test, y_test, 10, tuple(str(d) for d in range(10)))


def keras_cache_path(name: str) -> str:
    """Where the Keras loader keeps ``name`` once downloaded (honours ``KERAS_HOME``)."""
    _, fname, _ = KERAS_DATASETS[name]
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "datasets", fname)


# fmt: off
_CLASS_NAMES = {
    "mnist": tuple(str(d) for d in range(10)),
    "fashion_mnist": ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                      "Sneaker", "Bag", "Ankle boot"),
    "cifar10": ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                "truck"),
}
# fmt: on


def _from_keras(name: str, download: bool) -> Arrays:
    module, _, url = KERAS_DATASETS[name]
    path = keras_cache_path(name)
    cached = os.path.exists(path)
    if not cached and not download:
        raise DatasetUnavailableError(
            f"{name} is not in the Keras cache ({path}) and download=False. Download it from "
            f"{url} on a machine with internet access and copy it to that path, or use the "
            "offline set: data.load('digits')."
        )

    loader = getattr(keras.datasets, module).load_data
    previous_timeout = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_SOCKET_TIMEOUT_SECONDS)
    try:
        (x_train, y_train), (x_test, y_test) = loader()
    except Exception as err:  # the Keras loaders raise plain Exception on a failed fetch
        raise DatasetUnavailableError(
            f"{name} is not in the Keras cache ({path}) and could not be downloaded "
            f"({type(err).__name__}: {err}). Download it from {url} on a machine with internet "
            "access and copy it to that path, or use the offline set: data.load('digits')."
        ) from err
    finally:
        socket.setdefaulttimeout(previous_timeout)

    def prepare(x):
        x = np.asarray(x, np.float32) / 255.0
        return x[..., None] if x.ndim == 3 else x

    labels = lambda y: np.asarray(y, np.int32).reshape(-1)  # noqa: E731
    x_train, x_test = prepare(x_train), prepare(x_test)
    y_train, y_test = labels(y_train), labels(y_test)
    return Arrays(name, x_train, y_train, x_test, y_test, 10, _CLASS_NAMES[name])


def load(
    name: str = "digits", *, seed: int = 0, test_fraction: float = 0.2, download: bool = True
) -> Arrays:
    """Load a dataset as :class:`Arrays`: ``"digits"`` (offline, the default), ``"mnist"``,
    ``"fashion_mnist"`` or ``"cifar10"``.

    ``seed`` and ``test_fraction`` split ``"digits"`` (the others come pre-split); ``download``
    lets the Keras loaders fetch a dataset that is not cached (else
    :class:`DatasetUnavailableError`).
    """
    if name not in NAMES:
        raise ValueError(
            f"unknown dataset {name!r}; choose one of {', '.join(NAMES)} ('digits' works offline)."
        )
    if name == "digits":
        if not 0.0 < test_fraction < 1.0:
            raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction!r}.")
        return _digits(seed, test_fraction)
    return _from_keras(name, download)


def make_dataset(x, y, batch_size: int, *, shuffle=True, seed=0, repeat=False, drop_remainder=True):
    """Turn arrays into a batched ``tf.data.Dataset`` of ``(images, labels)``.

    With a seed, the shuffled order is the same on every run, so two training
    runs (say TF2 and TF1 side by side) see identical batches. ``batch_size`` is the global
    batch in later lessons; ``shuffle`` reshuffles each pass; ``repeat`` loops forever (for
    step-counted loops); ``drop_remainder`` drops a last, smaller batch so every batch has
    the same shape.
    """
    batch_size = checks.whole(batch_size, "batch_size", 1, "e.g. batch_size=64")
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)}); pass matching arrays.")
    if drop_remainder and batch_size > len(x):
        raise ValueError(
            f"batch_size={batch_size} is larger than the {len(x)} examples, so dropping the "
            f"remainder leaves no batch at all; use a batch_size <= {len(x)}."
        )
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    return ds.batch(batch_size, drop_remainder=drop_remainder).prefetch(2)


def datasets(name: str = "digits", *, batch_size: int = 64, seed: int = 0, download: bool = True):
    """Train and test pipelines for a named dataset.

    The training set is shuffled with ``seed`` and repeats forever (loops count
    steps, not epochs); the test set is read once, in order, keeping every example.
    Returns ``(train_ds, test_ds, arrays)``.
    """
    batch_size = checks.whole(batch_size, "batch_size", 1, "e.g. batch_size=64")
    arrays = load(name, seed=seed, download=download)
    train = make_dataset(arrays.x_train, arrays.y_train, batch_size, seed=seed, repeat=True)
    test = make_dataset(
        arrays.x_test, arrays.y_test, batch_size, shuffle=False, drop_remainder=False
    )
    return train, test, arrays


def synthetic(shape=(28, 28, 1), num_classes: int = 10, *, batch_size: int = 64, seed: int = 0):
    """An endless dataset of one random batch, for throughput runs.

    The same batch repeats from memory, so the input pipeline never limits the
    measured speed. ``shape`` is one example's, e.g. ``(32, 32, 3)``; labels are drawn from
    ``0..num_classes-1``.
    """
    batch_size = checks.whole(batch_size, "batch_size", 1, "e.g. batch_size=64")
    shape = checks.shape(shape, "shape")
    num_classes = checks.whole(num_classes, "num_classes", 2, "e.g. 10")
    rng = np.random.default_rng(seed)
    x = rng.random((batch_size, *shape), dtype=np.float32)
    y = rng.integers(0, num_classes, batch_size).astype(np.int32)
    return tf.data.Dataset.from_tensors((x, y)).repeat()
