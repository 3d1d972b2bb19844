"""dpkit.views.scaling_panel: its text fallback against dpkit.scaling's own prediction, its
refusals, and its widgets built (not displayed) and driven the way a learner drives them."""

import re

import pytest

from dpkit import cards, scaling

_VIEW = "application/vnd.jupyter.widget-view+json"


def reference(model, hardware, algorithm, devices, per_device_batch, overlap):
    """What dpkit.scaling predicts for the same choices, asked directly."""
    counts = [1]
    while counts[-1] < devices:
        counts.append(2 * counts[-1])
    return scaling.predict(
        cards.model_card(model),
        cards.HARDWARE[hardware],
        counts,
        per_device_batch=per_device_batch,
        algorithm=algorithm,
        overlap=overlap,
    )


CHOICES = [
    dict(
        model="vgg16",
        hardware="k80_10gbe",
        algorithm="parameter_server",
        devices=64,
        per_device_batch=32,
        overlap=0.3,
    ),
    dict(
        model="resnet50",
        hardware="p100_roce25",
        algorithm="ring",
        devices=1024,
        per_device_batch=64,
        overlap=0.0,
    ),
    dict(
        model="alexnet",
        hardware="dgx1",
        algorithm="hierarchical",
        devices=8,
        per_device_batch=512,
        overlap=1.0,
    ),
]


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
