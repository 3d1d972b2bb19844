"""dpkit.views.scaling_panel in a Jupyter kernel: its plot lands in the panel, against
dpkit.scaling's own prediction (the text fallback and refusals: tests/unit)."""

import re

import pytest

from tests.support.scaling_choices import CHOICES, reference

_VIEW = "application/vnd.jupyter.widget-view+json"


def efficiency_in(summary_html: str) -> str:
    return re.search(r"(\d+%) efficiency", summary_html).group(1)


def test_the_plot_lands_in_the_panel_in_a_jupyter_kernel():
    """In a kernel the plot is drawn while the Output widget captures (its msg_id set), which
    is how JupyterLab knows to put it inside the panel, and redrawn when the learner picks
    another model."""
    pytest.importorskip("ipywidgets")
    from tests.support.kernel_driver import Frontend

    f = Frontend()
    try:
        out = f.execute(
            "from dpkit.views import scaling_panel\n"
            "scaling_panel.panel(model='resnet50', hardware='p100_roce25', devices=64)"
        )
        kinds = [list(o.get("data", {})) for o in out]
        assert kinds == [["text/plain", "image/png"], ["text/plain", _VIEW]]
        capture = f.find("OutputModel")
        assert [u["msg_id"] != "" for u in capture.updates] == [True, False]
        summary = f.find("HTMLModel")
        resnet = reference(**dict(CHOICES[1], devices=64)).efficiency(64)
        assert efficiency_in(summary.state["value"]) == f"{resnet:.0%}"

        before = len(f.outputs)
        model = f.find("DropdownModel", description="model")
        f.set(model, index=model.state["_options_labels"].index("VGG-16"))
        vgg = reference(**dict(CHOICES[1], model="vgg16", devices=64)).efficiency(64)
        f.wait_for(
            lambda: (
                len(f.outputs) > before and efficiency_in(summary.state["value"]) == f"{vgg:.0%}"
            ),
            60,
            "the summary and the plot redrawn",
        )
        f.pump(0.5)  # nothing else follows
        assert [list(o["data"]) for o in f.outputs[before:]] == [["text/plain", "image/png"]]
        assert [u["msg_id"] != "" for u in capture.updates] == [True, False, True, False]
    finally:
        f.close()
