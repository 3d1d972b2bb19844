"""The workbook as a learner sees it: JupyterLab in headless Chromium, driven by Playwright.

Run with ``make test-browser`` (it installs Chromium and Playwright where it can). Each
test serves a copy of the notebooks (so nothing the browser does is saved over the
committed lessons), runs them the way a learner does, and checks what is on the page:
outputs rendered, widgets present and updating, no error output, no JavaScript errors.
Screenshots of every checked state go to ``runs/browser/`` (git ignores ``runs/``).
JupyterLab, the page and the skip without a browser are tests/support/browser.py's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

import pytest

from tests.support import machine
from tests.support.browser import ROOT, Lab, Page, needs_browser

pytestmark = needs_browser  # skip without Chromium or Playwright


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    for folder in ("lessons", "exercises"):
        shutil.copytree(ROOT / folder, root / folder)
    server = Lab(root)
    yield server
    server.stop()
    assert machine.wait_gone(server.proc.pid, 10, group=True), "JupyterLab's processes outlived it"


# --- The tests -----------------------------------------------------------------------------


def test_lesson_00_renders_the_device_table(browser, lab):
    page = Page(browser, lab, "lessons/00_setup_and_devices.ipynb")
    page.run()
    table = page.page.locator(".jp-OutputArea-output", has_text="backed by").first
    page.show("print(devices.describe(setup))")
    text = table.text_content()
    assert re.search(r"index\s+device\s+kind\s+backed by", text), text
    assert "/device:" in text
    page.shot("device-table")
    # The title's Open-in-Colab badge was drawn (its image asked for, answered offline).
    assert [u for u in page.external if u.endswith("colab-badge.svg")], page.external
    page.check_clean()


def _image_src(widget) -> str:
    return widget.locator("img").first.get_attribute("src") or ""


def test_lesson_05_sweep_panel_runs_updates_and_stops(browser, lab):
    page = Page(browser, lab, "lessons/05_throughput_and_scaling.ipynb")
    seconds = page.run(timeout=400)
    page.shot("after-run-all")
    page.check_clean()
    # The live sweeps rendered as widgets: progress bars at 100% and a finished status.
    assert page.page.get_by_text("finished: 3 run(s)").count() == 1  # strong: 1, 2, 4 devices
    assert page.page.get_by_text("finished: 2 run(s)").count() == 1  # weak: 1, 4 devices

    # The panel: the device-count picker is there, with its choices.
    picker = page.page.locator(".widget-toggle-buttons", has_text="devices up to").last
    page.show("panel.show()")
    assert picker.locator("button").all_inner_texts() == ["1", "2", "4", "8"]
    panel = picker.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][2]")
    run = panel.get_by_role("button", name="Run")
    stop = panel.get_by_role("button", name="Stop")
    status = panel.locator(".widget-html-content").first
    assert stop.is_disabled() and status.text_content() == "ready"

    picker.get_by_role("button", name="2", exact=True).click()
    run.click()
    sources, deadline = set(), time.monotonic() + 120
    while time.monotonic() < deadline and not (
        "[2/2]" in status.text_content() and len(sources) >= 3
    ):
        sources.add(_image_src(panel))
        time.sleep(0.3)
    page.shot("panel-running")
    text = status.text_content()
    assert "[2/2] 2 device(s)" in text, f"the 2-device run never started: {text!r}"
    assert len(sources - {""}) >= 3, "the throughput plot did not change while the sweep ran"
    pid = None
    deadline = time.monotonic() + 60
    while pid is None and time.monotonic() < deadline:  # the status shows the child's pid
        match = re.search(r"\[2/2\] 2 device\(s\): starting \(pid (\d+)\)", status.text_content())
        if match:
            pid = int(match.group(1))
        elif "window" in status.text_content():
            break
        time.sleep(0.05)
    stop.click()
    page.page.wait_for_function(
        "el => el.textContent.startsWith('stopped')", arg=status.element_handle(), timeout=30_000
    )
    page.shot("panel-stopped")
    assert run.is_enabled() and stop.is_disabled()
    if pid is not None:
        assert machine.wait_gone(pid, 10), "Stop did not end the child process"
    # Either way no bench child of the kernel is left.
    kernel_children = subprocess.run(
        ["pgrep", "-f", "dpkit.programs throughput"], capture_output=True, text=True
    ).stdout.split()
    assert kernel_children == [], f"bench children left running: {kernel_children}"
    page.check_clean()
    print(f"lesson 05 ran in the browser in {seconds:.0f} s")


def test_lesson_06_shows_tensorboard_inline(browser, lab):
    page = Page(browser, lab, "lessons/06_tensorboard.ipynb")
    stop_cell = page.cell_index("summaries.stop()")
    page.select(stop_cell)
    page.run("notebook:run-all-above", timeout=300)
    # The screenshots, carried as attachments, are drawn (decoded, not a broken image).
    pictures = page.page.locator("img[alt*='TensorBoard']")
    assert pictures.count() >= 2
    for i in range(pictures.count()):
        pictures.nth(i).scroll_into_view_if_needed()
    widths = pictures.evaluate_all("(imgs) => imgs.map((i) => i.complete && i.naturalWidth)")
    assert all(w and w >= 400 for w in widths), widths
    page.check_clean()
    frame = page.page.locator("iframe").last
    page.show("board = summaries.launch(")
    src = frame.get_attribute("src")
    assert src.startswith("http://127.0.0.1:"), src
    inner = page.page.frame_locator("iframe").last
    inner.get_by_text(re.compile("scalars", re.I)).first.wait_for(timeout=60_000)
    inner.get_by_text("train").first.wait_for(timeout=60_000)  # the lesson's run is listed
    page.shot("tensorboard")
    page.select(stop_cell)
    page.run("notebook:run-cell", timeout=60)
    assert (
        "TensorBoard processes left running: 0"
        in page.page.locator(
            ".jp-OutputArea-output", has_text="TensorBoard processes left running"
        ).last.text_content()
    )
    page.check_clean()


BROKEN = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "broken-0",
            "metadata": {},
            "outputs": [],
            "source": (
                "import ipywidgets, traitlets\n"
                "class Broken(ipywidgets.DOMWidget):\n"
                "    _view_name = traitlets.Unicode('NoSuchView').tag(sync=True)\n"
                "    _view_module = traitlets.Unicode('@dpkit/no-such-module').tag(sync=True)\n"
                "    _model_module = traitlets.Unicode('@dpkit/no-such-module').tag(sync=True)\n"
                "Broken()"
            ),
        }
    ],
    "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_a_widget_that_fails_to_render_fails_the_checks(browser, lab):
    """The checks can fail: a widget whose frontend code does not exist is caught."""
    (lab.root / "broken.ipynb").write_text(json.dumps(BROKEN))
    page = Page(browser, lab, "broken.ipynb")
    page.run(timeout=60)
    time.sleep(2)  # let the frontend try, and fail, to render it
    page.shot("broken-widget")
    with pytest.raises(AssertionError, match="widget failed to render|JavaScript errors"):
        page.check_clean()
