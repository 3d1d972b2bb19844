"""The workbook as a learner sees it: JupyterLab in headless Chromium, driven by Playwright.

Run with ``make test-browser`` (it installs Chromium and Playwright where it can). Each
test serves a copy of the notebooks (so nothing the browser does is saved over the
committed lessons), runs them the way a learner does, and checks what is on the page:
outputs rendered, widgets present and updating, no error output, no JavaScript errors.
Screenshots of every checked state go to ``runs/browser/`` (git ignores ``runs/``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support import machine  # noqa: E402

SHOTS = ROOT / "runs" / "browser"
INSTALL_HINT = (
    "run `make test-browser`, which installs them where it may, or by hand: "
    "`sudo apt-get install chromium` (Debian/Ubuntu) and `pip install playwright`."
)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

pytestmark = [
    pytest.mark.skipif(sync_playwright is None, reason=f"Playwright is missing: {INSTALL_HINT}"),
    pytest.mark.skipif(_chromium() is None, reason=f"Chromium is missing: {INSTALL_HINT}"),
]


# --- JupyterLab and the browser ------------------------------------------------------------


class Lab:
    """JupyterLab on a free loopback port with a token, serving a copy of the notebooks.

    ``base_url`` serves it under a path, as a JupyterHub does (``/user/<name>/``); ``env``
    adds to the environment the server and its kernels get.
    """

    def __init__(self, root: Path, *, base_url: str = "/", env: dict | None = None):
        self.root = root
        self.port = machine.free_port()
        self.token = secrets.token_hex(16)
        self.base_url = f"/{base_url.strip('/')}/".replace("//", "/")
        extra = dict(env or {})
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}
        env.pop("DPKIT_WIDGETS", None)  # a person is watching: real widgets
        # Where TensorBoard's frame points comes from these: only what the test asks for.
        env.pop("TENSORBOARD_PROXY_URL", None)
        env.pop("JUPYTERHUB_SERVICE_PREFIX", None)
        env.update(extra)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["DPKIT_RUNS"] = str(root / "runs")
        self.log = open(root / "lab.log", "w")  # noqa: SIM115 (closed in stop)
        # No "get notified about Jupyter news?" pop-up over the screenshots.
        settings = root / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter",
                "lab",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={self.port}",
                f"--ServerApp.base_url={self.base_url}",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True",
                "--ServerApp.allow_root=True",
                f"--LabApp.user_settings_dir={root / 'settings'}",
            ],  # fmt: skip
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"JupyterLab did not start:\n{(root / 'lab.log').read_text()[-2000:]}")

    def url(self, notebook: str) -> str:
        """The notebook in a workspace of its own (``reset``: no tabs from earlier pages)."""
        workspace = re.sub(r"[^a-z0-9]", "-", notebook.lower())
        return (
            f"http://127.0.0.1:{self.port}{self.base_url}lab/workspaces/{workspace}"
            f"/tree/{notebook}"
            f"?reset&token={self.token}"
        )

    def stop(self) -> None:
        machine.stop_group(self.proc)
        self.log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    for folder in ("lessons", "exercises"):
        shutil.copytree(ROOT / folder, root / folder)
    server = Lab(root)
    yield server
    server.stop()
    assert machine.wait_gone(server.proc.pid, 10, group=True), "JupyterLab's processes outlived it"


BLANK_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="117" height="20"/>'


class Page:
    """One notebook open in JupyterLab, with the console errors it produced."""

    def __init__(self, browser, lab: Lab, notebook: str):
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.console_errors: list[str] = []
        self.page.on(
            "console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None
        )
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))
        # The tests run offline and must not depend on the internet: the one thing a lesson
        # loads from elsewhere, the Open-in-Colab badge image, gets a blank picture here.
        self.external: list[str] = []
        self.page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/]|localhost[:/])"), self._blank)
        self.name = Path(notebook).stem
        self.page.goto(lab.url(notebook))
        self.page.wait_for_function(
            "window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel"
            "?.status === 'idle'",
            timeout=120_000,
        )

    def _blank(self, route) -> None:
        self.external.append(route.request.url)
        route.fulfill(status=200, content_type="image/svg+xml", body=BLANK_SVG)

    def js(self, expression: str):
        return self.page.evaluate(f"() => {{ const nb = window.jupyterapp.shell.currentWidget; "
                                  f"return {expression}; }}")  # fmt: skip

    def command(self, name: str) -> None:
        self.page.evaluate(f"window.jupyterapp.commands.execute({json.dumps(name)})")

    def run(self, command: str = "notebook:run-all-cells", timeout: float = 300) -> float:
        """Run cells with a notebook command; wait until each has run and the kernel is idle.

        Outputs and execution counts are cleared first (the lessons are committed with
        theirs), so a cell has run when it has an execution count again.
        """
        active = self.js("nb.content.activeCellIndex")
        count = self.js("nb.content.widgets.length")
        targets = {
            "notebook:run-all-cells": range(count),
            "notebook:run-all-above": range(active),
            "notebook:run-cell": range(active, active + 1),
        }[command]
        wanted = [i for i in targets if self.js(f"nb.content.widgets[{i}].model.type") == "code"]
        if command == "notebook:run-cell":
            self.command("notebook:clear-cell-output")
        else:
            self.command("notebook:clear-all-cell-outputs")
        self.select(active)
        start = time.monotonic()
        self.command(command)
        self.page.wait_for_function(
            "wanted => { const nb = window.jupyterapp.shell.currentWidget;"
            " const done = wanted.every(i => nb.content.widgets[i].model.executionCount);"
            " return done && nb.sessionContext.session.kernel.status === 'idle'; }",
            arg=wanted,
            timeout=timeout * 1000,
            polling=500,
        )
        return time.monotonic() - start

    def select(self, index: int) -> None:
        self.js(f"(nb.content.activeCellIndex = {index})")

    def cell_index(self, starts_with: str) -> int:
        sources = self.js("nb.content.widgets.map(c => c.model.sharedModel.getSource())")
        found = [i for i, s in enumerate(sources) if s.startswith(starts_with)]
        assert len(found) == 1, f"{len(found)} cells start with {starts_with!r}"
        return found[0]

    def show(self, source_contains: str) -> None:
        """Scroll the notebook to the cell whose source contains the text, as a person would."""
        sources = self.js("nb.content.widgets.map(c => c.model.sharedModel.getSource())")
        found = [i for i, s in enumerate(sources) if source_contains in s]
        assert found, f"no cell contains {source_contains!r}"
        self.js(f"(nb.content.activeCellIndex = {found[-1]})")
        self.page.evaluate(
            "i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')",
            found[-1],
        )
        time.sleep(1)

    def shot(self, what: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{self.name}-{what}.png"
        self.page.screenshot(path=str(path))
        return path

    def check_clean(self) -> None:
        """No error output cell, no widget that failed to render, no JavaScript error."""
        errors = self.page.locator(".jp-OutputArea-output[data-mime-type*='error']")
        assert errors.count() == 0, f"error output: {errors.first.text_content()[:1000]}"
        broken = self.page.get_by_text(re.compile(r"Error displaying widget|Failed to load model"))
        assert broken.count() == 0, f"a widget failed to render: {broken.first.text_content()}"
        # JupyterLab sets a markdown image's src to attachment:NAME before it swaps in the
        # attachment's data; Chromium logs that first try. test_lesson_06 checks they draw.
        real = [
            e
            for e in self.console_errors
            if "favicon" not in e and "ERR_UNKNOWN_URL_SCHEME" not in e
        ]
        assert not real, f"JavaScript errors in the console: {real[:3]}"


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
    stop_cell = page.cell_index("# NBVAL_CHECK_OUTPUT\nsummaries.stop()")
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
