"""dpkit.diagrams.tower_step: one box per tower, labelled with its device, and clear errors."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from dpkit import diagrams  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def gids(fig):
    return [p.get_gid() for ax in fig.axes for p in ax.patches if p.get_gid()]


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_one_tower_box_per_device_and_one_variables_box(n):
    names = [f"/device:CPU:{i}" for i in range(n)]
    fig = diagrams.tower_step(n, variables_on="cpu", device_names=names)
    assert sorted(gids(fig)) == sorted([f"tower_{i}" for i in range(n)] + ["variables"])
    labels = texts(fig)
    for name in names:  # every device named exactly once, under its own tower
        assert labels.count(name) == 1
    assert sum(label.startswith("tower_") for label in labels) == n


def test_each_device_name_sits_in_its_own_tower_column():
    names = ["alpha", "beta", "gamma"]
    fig = diagrams.tower_step(3, device_names=names)
    ax = fig.axes[0]
    towers = {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith("tower_")}
    for i, name in enumerate(names):
        (text,) = [t for t in ax.texts if t.get_text() == name]
        box = towers[f"tower_{i}"]
        assert box.get_x() <= text.get_position()[0] <= box.get_x() + box.get_width()


def test_shard_sizes_add_up_to_the_global_batch():
    labels = texts(diagrams.tower_step(4, global_batch_size=64))
    assert "global batch (64 examples)" in labels
    assert [label for label in labels if label.startswith("shard")] == [
        f"shard {i} (16)" for i in range(4)
    ]


def test_the_variables_home_is_named():
    cpu = " ".join(texts(diagrams.tower_step(2, variables_on="CPU")))
    device0 = " ".join(texts(diagrams.tower_step(2, "device0", device_names=["GPU:0", "GPU:1"])))
    assert "variables on the CPU" in cpu and "average the 2 gradients" in cpu
    assert "variables on GPU:0 (also runs tower_0)" in device0


def test_default_names_are_gpus():
    assert [t for t in texts(diagrams.tower_step(3)) if t.startswith("GPU:")] == [
        "GPU:0",
        "GPU:1",
        "GPU:2",
    ]


@pytest.mark.parametrize("n", [0, -1, 2.0, True, "4", None])
def test_bad_num_devices(n):
    with pytest.raises(ValueError, match=r"num_devices must be a whole number >= 1"):
        diagrams.tower_step(n)


def test_bad_variables_home():
    with pytest.raises(ValueError, match=r"variables_on must be 'cpu' or 'device0'.*'ps'"):
        diagrams.tower_step(2, variables_on="ps")


def test_device_names_must_match_the_count():
    with pytest.raises(ValueError, match=r"3 names for num_devices=2; pass one name per device"):
        diagrams.tower_step(2, device_names=["a", "b", "c"])


@pytest.mark.parametrize("batch", [63, 2, 0, 64.0])
def test_batch_that_does_not_split(batch):
    with pytest.raises(ValueError, match=r"does not split evenly into 4 towers"):
        diagrams.tower_step(4, global_batch_size=batch)
