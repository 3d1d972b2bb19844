"""dpkit.data: the offline digits, pipelines, Keras datasets offline and online, synthetic data."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from dpkit import checking, data


@pytest.fixture(scope="module")
def digits():
    return data.load("digits", seed=0)


def test_digits_have_the_mnist_layout(digits):
    from sklearn.datasets import load_digits

    total = len(load_digits().target)
    assert digits.x_train.shape[1:] == (28, 28, 1) and digits.x_test.shape[1:] == (28, 28, 1)
    assert len(digits.x_train) + len(digits.x_test) == total
    assert digits.x_train.dtype == np.float32 and digits.y_train.dtype == np.int32
    assert digits.x_train.min() >= 0.0 and digits.x_train.max() <= 1.0
    # The 20x20 digit sits in the centre: a 4-pixel empty border, like MNIST.
    border = np.concatenate(
        [
            digits.x_train[:, :4].ravel(),
            digits.x_train[:, 24:].ravel(),
            digits.x_train[:, :, :4].ravel(),
            digits.x_train[:, :, 24:].ravel(),
        ]
    )
    assert border.max() == 0.0
    assert set(np.unique(digits.y_test)) == set(range(10))  # stratified split


def test_resize_matches_tensorflow_bilinear():
    rng = np.random.default_rng(1)
    images = rng.random((5, 8, 8), dtype=np.float32)
    ours = data._resize_bilinear(images, 20)
    reference = tf.image.resize(images[..., None], (20, 20), method="bilinear").numpy()[..., 0]
    check = checking.agree(ours, reference, what="our resize vs tf.image.resize")
    assert check, check


def test_split_follows_the_seed():
    a, b, c = data.load(seed=0), data.load(seed=0), data.load(seed=1)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_test, c.y_test)


def test_pipeline_keeps_every_example_and_reshuffles_reproducibly(digits):
    x, y = digits.x_test, digits.y_test
    ds = data.make_dataset(x, y, 64, seed=3, drop_remainder=False)
    seen = np.concatenate([labels.numpy() for _, labels in ds])
    np.testing.assert_array_equal(np.sort(seen), np.sort(y))  # nothing lost, nothing doubled
    assert not np.array_equal(seen, y)  # but shuffled
    again = np.concatenate(
        [labels.numpy() for _, labels in data.make_dataset(x, y, 64, seed=3, drop_remainder=False)]
    )
    np.testing.assert_array_equal(seen, again)


def test_train_pipeline_repeats_and_test_pipeline_is_whole():
    train, test, arrays = data.datasets("digits", batch_size=100, seed=0)
    batches = list(train.take(len(arrays.x_train) // 100 + 3))  # more than one epoch
    assert all(images.shape == (100, 28, 28, 1) for images, _ in batches)
    assert sum(int(labels.shape[0]) for _, labels in test) == len(arrays.x_test)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "64", True, None])
def test_bad_batch_sizes_are_named(digits, bad):
    with pytest.raises(ValueError, match="batch_size must be a whole number"):
        data.make_dataset(digits.x_test, digits.y_test, bad)
    with pytest.raises(ValueError, match="batch_size"):
        data.synthetic(batch_size=bad)


def test_batch_larger_than_data_is_refused(digits):
    with pytest.raises(ValueError, match=r"larger than the 360 examples.*<= 360"):
        data.make_dataset(digits.x_test, digits.y_test, 1000)


def test_mismatched_arrays_are_refused(digits):
    with pytest.raises(ValueError, match="differ in length"):
        data.make_dataset(digits.x_test, digits.y_test[:-1], 10)


def test_unknown_dataset_lists_the_choices():
    with pytest.raises(ValueError, match="unknown dataset 'imagenet'.*digits"):
        data.load("imagenet")


def test_uncached_keras_dataset_without_download_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))

    def must_not_run():
        raise AssertionError("the loader must not be called when download=False")

    monkeypatch.setattr(keras.datasets.mnist, "load_data", must_not_run)
    with pytest.raises(data.DatasetUnavailableError) as info:
        data.load("mnist", download=False)
    message = str(info.value)
    assert str(tmp_path / "datasets" / "mnist.npz") in message
    assert "https://" in message and "data.load('digits')" in message


def test_failed_download_says_what_to_do(tmp_path, monkeypatch):
    import socket

    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    seen = {}

    def offline():  # what keras.utils.get_file raises when the fetch fails
        seen["timeout"] = socket.getdefaulttimeout()
        raise Exception("URL fetch failure on https://...: None -- [Errno -3] name resolution")

    monkeypatch.setattr(keras.datasets.cifar10, "load_data", offline)
    before = socket.getdefaulttimeout()
    with pytest.raises(data.DatasetUnavailableError, match="could not be downloaded.*'digits'"):
        data.load("cifar10")
    assert seen["timeout"] == data.DOWNLOAD_SOCKET_TIMEOUT_SECONDS  # a dropped network cannot hang
    assert socket.getdefaulttimeout() == before  # and the process's setting is restored


@pytest.mark.parametrize(
    "name, shape, label_shape",
    [
        ("mnist", (28, 28), (None,)),
        ("fashion_mnist", (28, 28), (None,)),
        ("cifar10", (32, 32, 3), (None, 1)),  # CIFAR labels come as a column
    ],
)
def test_keras_loader_output_is_prepared(monkeypatch, name, shape, label_shape):
    rng = np.random.default_rng(0)

    def fake_loader(n_train=12, n_test=4):
        def part(n):
            x = rng.integers(0, 256, (n, *shape), dtype=np.uint8)
            y = rng.integers(0, 10, (n, 1) if len(label_shape) == 2 else (n,), dtype=np.uint8)
            return x, y

        return part(n_train), part(n_test)

    module = data.KERAS_DATASETS[name][0]
    monkeypatch.setattr(getattr(keras.datasets, module), "load_data", fake_loader)
    monkeypatch.setattr(data.os.path, "exists", lambda path: True)  # pretend it is cached
    arrays = data.load(name)
    channels = shape[2] if len(shape) == 3 else 1
    assert arrays.x_train.shape == (12, shape[0], shape[1], channels)
    assert arrays.y_train.shape == (12,) and arrays.y_test.shape == (4,)
    assert arrays.x_train.dtype == np.float32 and arrays.x_train.max() <= 1.0
    assert len(arrays.class_names) == 10


def test_synthetic_repeats_one_batch_of_the_asked_shape():
    ds = data.synthetic((8, 8, 3), 5, batch_size=4, seed=2)
    (x1, y1), (x2, y2) = list(ds.take(2))
    assert x1.shape == (4, 8, 8, 3) and y1.shape == (4,)
    np.testing.assert_array_equal(x1.numpy(), x2.numpy())
    assert y1.numpy().max() < 5


@pytest.mark.parametrize(
    "shape, classes, words",
    [
        ((0, 8), 10, "shape must be positive"),
        ((), 10, "shape must be positive"),
        ((8, 8), 1, "num_classes must be a whole number >= 2"),
    ],
)
def test_synthetic_bad_arguments(shape, classes, words):
    with pytest.raises(ValueError, match=words):
        data.synthetic(shape, classes)
