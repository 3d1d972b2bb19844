"""dpkit.views.widgets without a kernel: no frontend outside one, the panel's text mode prints
the matching ``python -m dpkit bench`` command, and bad starting values are refused. In a
kernel driven the way JupyterLab drives it: tests/notebooks/test_widgets.py."""

import pytest

from dpkit.plumbing import contract
from dpkit.views import widgets


def test_no_frontend_outside_a_kernel(monkeypatch):
    monkeypatch.delenv(contract.WIDGETS, raising=False)
    assert widgets.frontend() is False  # pytest is no Jupyter kernel
    monkeypatch.setenv(contract.WIDGETS, "widgets")
    assert widgets.frontend() is True
    monkeypatch.setenv(contract.WIDGETS, "text")
    assert widgets.frontend() is False


def test_panel_in_text_mode_prints_the_same_sweep_for_a_terminal(monkeypatch, capsys):
    monkeypatch.setenv(contract.WIDGETS, "text")
    widgets.SweepPanel(max_devices=2, model="mnist_mlp", batch=64, scaling="weak").show()
    out = capsys.readouterr().out
    assert "python -m dpkit bench --up-to 2 --model mnist_mlp --strategy towers" in out
    assert out.rstrip().endswith("--batch 64 --weak")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_devices": 3}, "max_devices must be one of"),
        ({"model": "vgg"}, "model must be one of"),
        ({"strategy": "single"}, "strategy must be one of"),
        ({"batch": 255, "max_devices": 2}, "use 254 or 256"),
    ],
)
def test_panel_refuses_bad_starting_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        widgets.SweepPanel(**kwargs)
