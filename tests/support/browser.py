"""What the browser tests share: JupyterLab in headless Chromium, driven by Playwright.

Run them with ``make test-browser`` (it installs Chromium and Playwright where it can).

* :data:`needs_browser`: the marks that skip a module without Playwright or Chromium
  (a test module sets ``pytestmark = needs_browser``);
* :func:`chromium_path` and :data:`sync_playwright`: what browser_tests/conftest.py launches;
* :class:`Lab`: JupyterLab on a free loopback port with a token, serving a folder;
* :class:`Page`: one notebook open in it, run as a learner runs it and checked on the page;
* :data:`ROOT` (the repository) and :data:`SHOTS` (``runs/browser/``, where screenshots go;
  git ignores ``runs/``).

The browser tests import this module, ``tests.support`` and dpkit, never one another.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpkit.plumbing import contract, procs
from tests.support import machine

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "runs" / "browser"
INSTALL_HINT = (
    "run `make test-browser`, which installs them where it may, or by hand: "
    "`sudo apt-get install chromium` (Debian/Ubuntu) and `pip install playwright`."
)


def chromium_path() -> str | None:
    """The Chromium (or Chrome) on PATH that Playwright launches, or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

#: A browser test module's ``pytestmark``: skip, saying how to install, without either.
needs_browser = [
    pytest.mark.skipif(sync_playwright is None, reason=f"Playwright is missing: {INSTALL_HINT}"),
    pytest.mark.skipif(chromium_path() is None, reason=f"Chromium is missing: {INSTALL_HINT}"),
]


# --- JupyterLab and the browser ------------------------------------------------------------


class Lab:
    """JupyterLab on a free loopback port with a token, serving ``root`` (a copy of notebooks).

    ``base_url`` serves it under a path, as a JupyterHub does (``/user/<name>/``); ``env``
    adds to the environment the server and its kernels get.
    """

    def __init__(self, root: Path, *, base_url: str = "/", env: dict | None = None):
        self.root = root
        self.port = machine.free_port()
        self.token = secrets.token_hex(16)
        self.base_url = f"/{base_url.strip('/')}/".replace("//", "/")
        extra = dict(env or {})
        env = procs.child_env()  # quiet TensorFlow, dpkit importable
        env.pop(contract.WIDGETS, None)  # a person is watching: real widgets
        # Where TensorBoard's frame points comes from these: only what the test asks for.
        env.pop("TENSORBOARD_PROXY_URL", None)
        env.pop("JUPYTERHUB_SERVICE_PREFIX", None)
        env.update(extra)
        env[contract.RUNS] = str(root / "runs")
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
