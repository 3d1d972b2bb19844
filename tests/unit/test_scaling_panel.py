"""dpkit.views.scaling_panel: its text fallback against dpkit.scaling's own prediction, its
refusals, and its widgets built (not displayed) and driven the way a learner drives them."""

import re

import pytest

from dpkit import cards, scaling
from dpkit.plumbing import contract
from dpkit.views import scaling_panel
from tests.support.scaling_choices import CHOICES, reference


@pytest.mark.parametrize("choices", CHOICES, ids=lambda c: c["model"])
def test_text_fallback_prints_the_table_of_the_same_prediction(choices, monkeypatch, capsys):
    monkeypatch.setenv(contract.WIDGETS, "text")
    expected = reference(**choices)
    n = choices["devices"]
    returned = scaling_panel.panel(**choices)
    table, line = capsys.readouterr().out.rstrip("\n").split("\n\n")
    rows = table.splitlines()[2:]
    assert [int(r.split()[0]) for r in rows] == [s.devices for s in expected.steps]
    last = rows[-1].split()
    assert last[0] == str(n)
    assert last[-2] == f"{expected.efficiency(n):.0%}"  # the efficiency column
    assert last[-1] == expected.at(n).dominant
    assert returned.efficiency(n) == expected.efficiency(n)
    assert f"{expected.efficiency(n):.0%} efficiency" in line
    assert f"{expected.at(n).dominant} dominates" in line
    assert line.startswith(f"On {n} device")


@pytest.mark.parametrize(
    "bad, named, listed",
    [
        ({"model": "resnet"}, "model", "resnet50, resnet101"),
        ({"hardware": "tpu_pod"}, "hardware", "dgx1, p100_roce25"),
        ({"algorithm": "allreduce"}, "algorithm", "ring, parameter_server, hierarchical"),
        ({"devices": 1000}, "devices", "1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024"),
        ({"devices": 2048}, "devices", "512, 1024"),
        ({"devices": 8.0}, "devices", "1, 2, 4"),
        ({"hardware": "dgx1", "devices": 16}, "hardware 'dgx1'", "p100_roce25, k80_10gbe"),
        ({"per_device_batch": 0}, "per_device_batch", "per_device_batch=64"),
        ({"overlap": 1.5}, "overlap", "0 to 1"),
        ({"overlap": float("nan")}, "overlap", "0 to 1"),
        ({"batch": 64}, "batch", "model, hardware, algorithm, devices, per_device_batch"),
    ],
)
def test_bad_choices_name_the_choice_and_list_the_valid_ones(bad, named, listed, monkeypatch):
    monkeypatch.setenv(contract.WIDGETS, "text")
    make = scaling_panel.ScalingPanel if "batch" in bad else scaling_panel.panel
    with pytest.raises(ValueError, match=re.escape(named)) as err:
        make(**bad)  # panel() itself takes no unknown keyword: a TypeError
    assert listed in str(err.value)
    with pytest.raises(ValueError, match=re.escape(named)):
        scaling_panel.ScalingPanel(**bad)


def efficiency_in(summary_html: str) -> str:
    return re.search(r"(\d+%) efficiency", summary_html).group(1)


def test_the_widget_redraws_when_a_control_changes():
    pytest.importorskip("ipywidgets")
    start = dict(CHOICES[1], devices=64)
    p = scaling_panel.ScalingPanel(**start)  # built, not displayed
    assert p.model.options[0] == ("AlexNet", "alexnet")
    assert [v for _, v in p.model.options] == list(cards.MODEL_NAMES)
    assert list(p.algorithm.options) == list(scaling.ALGORITHMS)
    assert [v for _, v in p.hardware.options] == list(cards.HARDWARE)
    assert list(p.devices.options) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    first = reference(**start).efficiency(64)
    assert efficiency_in(p.summary.value) == f"{first:.0%}"
    assert p.prediction.efficiency(64) == first
    assert "ResNet-50" in p.figure.axes[0].get_title()

    p.model.value = "vgg16"
    vgg = reference(**dict(start, model="vgg16"))
    assert p.prediction.model.name == "VGG-16"
    assert p.prediction.efficiency(64) == vgg.efficiency(64) != first
    assert efficiency_in(p.summary.value) == f"{vgg.efficiency(64):.0%}"
    assert f"{vgg.at(64).dominant} dominates" in p.summary.value
    assert "VGG-16" in p.figure.axes[0].get_title()
    assert [t.get_text() for t in p.figure.axes[1].get_xticklabels()][-1] == "64"

    p.overlap.value = 1.0
    assert p.prediction.efficiency(64) == reference(
        **dict(start, model="vgg16", overlap=1.0)
    ).efficiency(64)

    # a single node holds 8 devices: the device choices shrink and the prediction follows
    p.hardware.value = "dgx1"
    assert list(p.devices.options) == [1, 2, 4, 8] and p.devices.value == 8
    assert [s.devices for s in p.prediction.steps] == [1, 2, 4, 8]
    p.hardware.value = "k80_10gbe"
    assert p.devices.options[-1] == 1024 and p.devices.value == 8
    p.devices.value = 256
    assert p.prediction.steps[-1].devices == 256
    assert p.settings() == dict(
        start,
        model="vgg16",
        hardware="k80_10gbe",
        devices=256,
        overlap=1.0,
    )


def test_panel_displays_the_widget_in_a_frontend(monkeypatch):
    pytest.importorskip("ipywidgets")
    import IPython.display

    shown = []
    monkeypatch.setenv(contract.WIDGETS, "widgets")
    monkeypatch.setattr(IPython.display, "display", shown.append)
    assert scaling_panel.panel(model="resnet152", devices=32) is None
    assert len(shown) == 1
    assert type(shown[0]).__name__ == "VBox"
