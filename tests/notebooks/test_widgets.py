"""dpkit.views.widgets driving child processes: the text fallback's progress and table, and the
panel and live_sweep in a kernel driven the way JupyterLab drives it (rendered, run, updated
in place, Stop kills the child). Without a kernel: tests/unit/test_widgets.py.

Every child here is the stand-in throughput program (tests/support/standin_throughput.py:
the same records, no TensorFlow), since what is under test is the view. live_sweep with the
real program in a kernel is lesson 05's sweep, whose nbval-checked cells say each child
trained on the devices asked for and finished."""

import re

import pytest

from dpkit.plumbing import contract, procs
from dpkit.views import widgets
from tests.support import machine, standin_throughput
from tests.support.kernel_driver import Frontend

TINY = dict(model="mnist_mlp", batch=64, warmup_steps=1, window_steps=2, windows=3, timeout=120)


def test_text_fallback_prints_progress_and_the_table(monkeypatch, capsys):
    monkeypatch.setenv(contract.WIDGETS, "text")
    monkeypatch.setattr(procs, "program_argv", standin_throughput.program_argv)
    report = widgets.live_sweep([1, 2], measure_peak=False, **TINY)
    out = capsys.readouterr().out
    assert [r.num_devices for r in report.results] == [1, 2]
    assert out.count(" window ") == 6  # 3 windows per run, printed as they came
    table = out.split("\n\n")[-1].splitlines()
    assert table[0].split()[:2] == ["devices", "global"]
    assert [line.split()[0] for line in table[1:]] == ["1", "2"]


@pytest.fixture
def frontend():
    f = Frontend()
    yield f
    f.close()


def _status_texts(status):
    return [u["value"] for u in status.updates if "value" in u]


def test_panel_renders_runs_updates_and_stops_in_a_jupyter_kernel(frontend):
    f = frontend
    f.execute(
        "from dpkit.plumbing import procs\n"
        "from dpkit.views import widgets\n"
        "from tests.support import standin_throughput\n"
        "procs.program_argv = standin_throughput.program_argv\n"
        f"panel = widgets.SweepPanel(max_devices=1, **{TINY!r})\n"
        "panel.show()"
    )
    # Rendered: the kernel opened the widget models and displayed the panel.
    views = [
        o for o in f.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert len(views) == 1
    picker = f.find("ToggleButtonsModel", description="devices up to")
    assert picker.state["_options_labels"] == ["1", "2", "4", "8"]
    run, stop = f.find("ButtonModel", description="Run"), f.find("ButtonModel", description="Stop")
    assert stop.state["disabled"] is True
    status = f.find("HTMLModel", value="ready")
    progress, image = f.find("IntProgressModel"), f.find("ImageModel")

    # The learner picks 2 devices and presses Run.
    f.set(picker, index=1)
    f.click(run)
    f.wait_for(lambda: status.state["value"].startswith("finished"), 150, "the sweep to finish")
    texts = _status_texts(status)
    assert any("[1/2] 1 device(s): window" in t for t in texts)
    assert any("[2/2] 2 device(s): window" in t for t in texts)
    values = [u["value"] for u in progress.updates if "value" in u]
    assert values == sorted(values) and values[-1] == progress.state["max"] == 2 * 7
    # The plot was redrawn while the sweep ran, not only at the end.
    assert len([u for u in image.updates if "value" in u]) >= 3
    assert image.state["value"][:8] == b"\x89PNG\r\n\x1a\n"
    assert run.state["disabled"] is False and stop.state["disabled"] is True
    # The children were given the counts the picker said.
    out = f.execute("print([r.num_devices for r in panel.report.results])")
    assert out[-1]["text"].strip() == "[1, 2]"

    # Run again and press Stop while the first child trains: it is killed. The child gets
    # far more windows than it can finish, so that on a busy machine it is still training
    # when the click arrives (with 3 windows it could end first, and nothing is stopped).
    f.execute("panel._config['windows'] = 100_000")
    count = len(status.updates)
    f.click(run)
    f.wait_for(
        lambda: any("window" in t for t in _status_texts(status)[count:]), 60, "a first window"
    )
    pid = int(re.search(r"pid (\d+)", " ".join(_status_texts(status)[count:])).group(1))
    f.click(stop)
    f.wait_for(lambda: status.state["value"].startswith("stopped"), 30, "the sweep to stop")
    assert machine.wait_gone(pid, 60)
    out = f.execute("print([r.status for r in panel.report.results])")
    assert out[-1]["text"].strip() == "['stopped']"


def test_live_sweep_updates_in_place_in_a_jupyter_kernel(frontend):
    f = frontend
    f.execute(
        "from dpkit.plumbing import procs\n"
        "from dpkit.views import widgets\n"
        "from tests.support import standin_throughput\n"
        "procs.program_argv = standin_throughput.program_argv\n"
        f"report = widgets.live_sweep([1], measure_peak=False, **{TINY!r})"
    )
    status = [m for m in f.models.values() if m.name == "HTMLModel" and "[1/1]" in str(m.updates)]
    assert len(status) == 1
    assert status[0].state["value"] == "finished: 1 run(s)"
    progress = f.find("IntProgressModel")
    assert progress.state["value"] == progress.state["max"] == 7
    assert progress.state["bar_style"] == "success"
    assert procs.live("bench") == []
