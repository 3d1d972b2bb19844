"""TensorBoard inside a notebook served the way a JupyterHub or Binder serves one.

JupyterLab runs under the base URL ``/user/learner/`` with jupyter-server-proxy (a server
extension of the lab environment) and ``JUPYTERHUB_SERVICE_PREFIX=/user/learner/`` in its
environment, which its kernels inherit, as on a hub. A notebook the test writes logs two
runs of scalars, then runs lesson 06's own TensorBoard cells (the launch-and-show cell and
the stop cell, their sources read from the lesson file). The checks: launch prints the
loopback address TensorBoard listens on and the view the proxied path it shows; the frame
points at ``/user/learner/proxy/<port>/`` on the lab's own origin; TensorBoard's dashboard
renders inside it (title, the runs, the logged tag); every request of the frame went through
that proxy path and none straight to TensorBoard's port; and the stop cell leaves no
TensorBoard behind. A screenshot goes to ``runs/browser/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time

import pytest

from tests.support import machine
from tests.support.browser import ROOT, Lab, Page, needs_browser

pytestmark = needs_browser  # skip without Chromium or Playwright

BASE_URL = "/user/learner/"
LESSON = ROOT / "lessons" / "06_tensorboard.ipynb"
TAG = "loss_through_proxy"
NOTEBOOK = "proxied_tensorboard.ipynb"
NOT_FOUND = "Failed to load resource: the server responded with a status of 404 (Not Found)"
#: The view lesson 06's setup cell imports, under the name its TensorBoard cell uses.
VIEW_IMPORT = "from dpkit.views import board as board_view"

LOG_SCALARS = f"""\
import tensorflow as tf
from dpkit import summaries
{VIEW_IMPORT}

LAUNCH_TENSORBOARD = True  # the lesson's parameter that its TensorBoard cell reads
run = summaries.open_run("proxied_tensorboard")
for name, values in {{"train": [0.9, 0.5, 0.3], "test": [1.0, 0.7, 0.6]}}.items():
    with run.writer(name).as_default():
        for step, value in enumerate(values):
            tf.summary.scalar({TAG!r}, value, step=step)
run.flush()"""


def _lesson_cell(marker: str) -> str:
    """The source of the one code cell of lesson 06 that contains ``marker``."""
    cells = json.loads(LESSON.read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    found = [s for s in sources if marker in s]
    assert len(found) == 1, f"{len(found)} code cells of lesson 06 contain {marker!r}"
    return found[0]


def _notebook() -> dict:
    _lesson_cell(VIEW_IMPORT)  # the lesson's setup imports the view under the same name
    sources = [
        LOG_SCALARS,
        _lesson_cell("summaries.launch("),  # the lesson's TensorBoard cell: launch, show
        _lesson_cell("summaries.stop()"),
    ]
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"proxied-{i}",
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for i, source in enumerate(sources)
    ]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture(scope="module")
def hub_lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxied")
    (root / NOTEBOOK).write_text(json.dumps(_notebook(), indent=1))
    server = Lab(root, base_url=BASE_URL, env={"JUPYTERHUB_SERVICE_PREFIX": BASE_URL})
    yield server
    server.stop()
    assert machine.wait_gone(server.proc.pid, 10, group=True), "JupyterLab's processes outlived it"


def _values_arrived(responses, proxied: str) -> bool:
    """TensorBoard's dashboard fetched the logged values through the proxy path."""
    for response in list(responses):
        url = response.url
        if url.startswith(proxied) and "/data/plugin/" in url and response.status == 200:
            try:
                body = response.text()
            except Exception:  # noqa: BLE001 (a body that is gone is not the one we want)
                continue
            if TAG in body and "0.3" in body:  # the train run's last value, step 2
                return True
    return False


def test_lesson_06s_tensorboard_renders_through_the_hub_proxy(browser, hub_lab):
    page = Page(browser, hub_lab, NOTEBOOK)
    requests: list[str] = []
    responses: list = []
    page.page.on("request", lambda r: requests.append(r.url))
    page.page.on("response", lambda r: responses.append(r))
    stop_cell = page.cell_index("summaries.stop()")
    page.select(stop_cell)
    page.run("notebook:run-all-above", timeout=300)
    pid = None
    try:
        printed = page.page.locator(".jp-OutputArea-output", has_text="TensorBoard started")
        text = printed.last.text_content()
        launched = re.search(
            r"TensorBoard started at http://127\.0\.0\.1:(\d+)/ \(pid (\d+)\); "
            r"summaries\.stop\(\) ends it\.",
            text,
        )
        assert launched, f"the launch cell printed: {text!r}"
        port, pid = launched.group(1), int(launched.group(2))
        shown = page.page.locator(".jp-OutputArea-output", has_text="TensorBoard is shown below")
        text = shown.last.text_content()
        through = re.search(
            rf"TensorBoard is shown below through {BASE_URL}proxy/(\d+)/ "
            r"\(proxied to http://127\.0\.0\.1:(\d+)/\)\.",
            text,
        )
        assert through, f"the launch cell printed: {text!r}"
        assert through.group(1) == through.group(2) == port

        # The frame points at the proxy path on the lab's own address...
        proxied = f"http://127.0.0.1:{hub_lab.port}{BASE_URL}proxy/{port}/"
        element = page.page.locator("iframe[id^='dpkit-tensorboard-']")
        assert element.count() == 1
        page.page.wait_for_function(
            "el => el.src !== ''", arg=element.element_handle(), timeout=30_000
        )
        assert element.get_attribute("src") == proxied
        page.show("summaries.launch(")

        # ...and TensorBoard's dashboard renders in it: its title, both runs, the tag.
        inner = page.page.frame_locator("iframe[id^='dpkit-tensorboard-']")
        inner.get_by_text(TAG).first.wait_for(timeout=90_000)
        inner.get_by_text("train", exact=True).first.wait_for(timeout=60_000)
        inner.get_by_text("test", exact=True).first.wait_for(timeout=60_000)
        frame = element.element_handle().content_frame()
        assert frame.url.split("#")[0] == proxied  # TensorBoard adds #timeseries
        assert frame.title() == "TensorBoard"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _values_arrived(responses, proxied):
            page.page.wait_for_timeout(500)  # lets Playwright deliver the responses
        page.shot("proxied-tensorboard")
        assert _values_arrived(responses, proxied), sorted(
            {r.url for r in responses if r.url.startswith(proxied)}
        )
        direct = [u for u in requests if re.match(rf"https?://[^/]+:{port}/", u)]
        assert not direct, f"the browser went to TensorBoard's port directly: {direct[:5]}"
        # TensorBoard asks for its Roboto fonts at /font-roboto/ on the origin's root,
        # whatever path it is served under (tensorflow/tensorboard#1885, open): behind a
        # path proxy those 404 and the browser draws another font. Nothing else may fail.
        fonts = f"http://127.0.0.1:{hub_lab.port}/font-roboto/"
        failed = [(r.status, r.url) for r in responses if r.status >= 400]
        assert all(u.startswith(fonts) for _, u in failed), f"requests failed: {failed[:5]}"
        for _ in failed:
            with contextlib.suppress(ValueError):
                page.console_errors.remove(NOT_FOUND)
        page.check_clean()

        # The lesson's stop cell ends it.
        page.select(stop_cell)
        page.run("notebook:run-cell", timeout=60)
        left = page.page.locator(
            ".jp-OutputArea-output", has_text="TensorBoard processes left running"
        ).last.text_content()
        assert "TensorBoard processes left running: 0" in left
        assert machine.wait_gone(pid, 30, group=True), "TensorBoard outlived the stop cell"
        page.check_clean()
    finally:
        page.page.close()
        if pid is not None and not machine.group_gone(pid):
            os.killpg(pid, signal.SIGKILL)  # do not leave it behind on failure
