"""Screenshots of TensorBoard's dashboards for lesson 06, taken from the run the lesson made.

TensorBoard serves the run folder lesson 06 wrote (``runs/06_tensorboard/<date-time>/``);
headless Chromium opens its Scalars and Histograms dashboards, waits until the charts are
drawn and saves each as a PNG of at most 1200 x 800 pixels, cropped to the dashboard.

* ``make test-browser`` runs this file after ``test_lab_browser.py`` and reuses the run
  folder that lesson 06 wrote in JupyterLab there; the PNGs go to ``runs/browser/``.
* ``make screenshots`` runs this file alone (no JupyterLab: lesson 06 runs headless
  first) with ``DPKIT_UPDATE_SCREENSHOTS=1``, which writes the PNGs to
  ``lessons/images/``, where lesson 06 shows them (committed; kept under 300 kB each).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from dpkit.plumbing import contract, procs
from tests.support import machine
from tests.support.browser import ROOT, SHOTS, needs_browser

pytestmark = needs_browser  # skip without Chromium or Playwright

LESSON = ROOT / "lessons" / "06_tensorboard.ipynb"
IMAGES = ROOT / "lessons" / "images"
#: The runs (sub-folders) lesson 06 writes into its run folder.
LESSON_RUNS = {"train", "test", "mlp_sgd_0.1", "mlp_sgd_1.0"}
VIEWPORT = {"width": 1200, "height": 800}
MAX_BYTES = 300_000


def _wait_until(condition, timeout: float, what: str, every: float = 0.25):
    """Poll ``condition`` until it returns something true; fail naming ``what`` if it never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def _complete(run_dir: Path) -> bool:
    """Every run lesson 06 writes is there with an event file."""
    return all(any((run_dir / name).glob("*tfevents*")) for name in LESSON_RUNS)


def _run_lesson(runs_root: Path) -> None:
    """Run lesson 06 top to bottom in a fresh kernel, its runs going under ``runs_root``."""
    env = procs.child_env({contract.RUNS: str(runs_root)})  # quiet TensorFlow, dpkit importable
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, 'tools'); "
        "import run_notebooks; run_notebooks.execute(Path(sys.argv[1]))"
    )
    log = runs_root.parent / "lesson_06.log"
    with open(log, "w") as out:
        child = subprocess.Popen(
            [sys.executable, "-c", code, str(LESSON)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the kernel joins its group: one kill ends both
        )
        try:
            code = child.wait(timeout=900)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
    assert machine.wait_gone(child.pid, 30, group=True), "lesson 06's kernel outlived its run"
    assert code == 0, f"lesson 06 failed:\n{log.read_text()[-3000:]}"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """The newest complete run folder lesson 06 made in this session's JupyterLab, else new."""
    made_in_lab = sorted(
        (
            p
            for p in tmp_path_factory.getbasetemp().glob("lab*/runs/06_tensorboard/*")
            if p.is_dir()
        ),
        key=lambda p: p.name,
    )
    made_in_lab = [p for p in made_in_lab if _complete(p)]
    if made_in_lab:
        return made_in_lab[-1]
    runs_root = tmp_path_factory.mktemp("lesson06") / "runs"
    _run_lesson(runs_root)
    made = sorted((runs_root / "06_tensorboard").iterdir())
    assert len(made) == 1 and _complete(made[0]), f"lesson 06 made {made}"
    return made[0]


class Board:
    """``python -m tensorboard.main`` on a free loopback port, always reaped in ``stop``."""

    def __init__(self, run_dir: Path, log: Path):
        runs_root = run_dir.parent.parent
        self.port = machine.free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = open(log, "w")  # noqa: SIM115  (closed in stop)
        env = procs.child_env()  # quiet TensorFlow
        # Started in the runs folder with a relative logdir: the dashboard shows
        # "06_tensorboard/<date-time>", not a temporary path.
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tensorboard.main",
                "--logdir",
                str(run_dir.relative_to(runs_root)),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],  # fmt: skip
            cwd=runs_root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def runs(self) -> set[str]:
        """The runs TensorBoard has loaded so far (it reads the folder in the background)."""
        if self.proc.poll() is not None:
            self.log.flush()
            log = Path(self.log.name).read_text()[-2000:]
            pytest.fail(f"TensorBoard exited with {self.proc.returncode}:\n{log}")
        try:
            with urllib.request.urlopen(self.url + "data/runs", timeout=5) as answer:
                return set(json.load(answer))
        except (OSError, urllib.error.URLError, ValueError):
            return set()

    def stop(self) -> None:
        machine.stop_group(self.proc)
        self.log.close()


@pytest.fixture(scope="module")
def board(run_dir, tmp_path_factory):
    server = Board(run_dir, tmp_path_factory.mktemp("tensorboard") / "tensorboard.log")
    try:
        _wait_until(lambda: server.runs() >= LESSON_RUNS, 180, "TensorBoard to load the runs")
        yield server
    finally:
        server.stop()
        assert machine.wait_gone(server.proc.pid, 10, group=True), "TensorBoard outlived the tests"


def _target(name: str) -> Path:
    if os.environ.get("DPKIT_UPDATE_SCREENSHOTS") == "1":
        IMAGES.mkdir(exist_ok=True)
        return IMAGES / f"tensorboard_{name}.png"
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"06_tensorboard-{name}.png"


def _open(browser, board: Board, dashboard: str, tag_filter: str, extra: str = ""):
    """A page on one dashboard with the tag filter set (TensorBoard keeps both in the URL)."""
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    query = urllib.parse.quote(tag_filter, safe="")
    page.goto(f"{board.url}#{dashboard}&tagFilter={query}{extra}")
    # The cards that match the filter come first, in a section of their own.
    section = page.locator("tf-category-paginated-view").filter(has_text="Tags matching")
    return page, section, errors


def _save(page, section, name: str, errors: list[str]) -> Path:
    """Screenshot the page from the top to the end of the matching section, at most 800 high."""
    box = section.first.bounding_box()
    height = min(VIEWPORT["height"], int(box["y"] + box["height"]) + 8)
    path = _target(name)
    page.screenshot(
        path=str(path), clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height}
    )
    page.close()
    assert not errors, f"JavaScript errors in TensorBoard: {errors[:3]}"
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes"
    return path


def _lines(section) -> int:
    return section.locator("vz-line-chart2 svg path.line[d]").count()


def test_screenshot_scalars(browser, board):
    """Train and test loss in one chart, the test accuracy, and each tower's loss."""
    tags = ["accuracy", "loss", "tower_0/loss", "tower_1/loss"]
    page, section, errors = _open(
        browser, board, "scalars", r"^(loss|accuracy|tower_\d/loss)$", "&_smoothingWeight=0"
    )
    cards = section.locator("tf-scalar-card")
    _wait_until(lambda: cards.count() == len(tags), 60, "the 4 scalar cards")
    # Drawn: one line per run and tag (loss: train and test), each with its points.
    _wait_until(lambda: _lines(section) >= 5, 60, "the scalar charts to be drawn")
    titles = section.locator("tf-scalar-card .heading-label, tf-scalar-card .tag").all_inner_texts()
    assert all(any(tag in t for t in titles) for tag in tags), titles
    path = _save(page, section, "scalars", errors)
    print(f"saved {path.relative_to(ROOT)}")


def test_screenshot_histograms(browser, board):
    """The hidden activations at both learning rates: the dead-ReLU spike at 0 at rate 1.0."""
    page, section, errors = _open(browser, board, "histograms", r"^layer1/activations")
    loaders = section.locator("tf-histogram-loader")
    _wait_until(lambda: loaders.count() == 2, 60, "the 2 histogram cards (one per rate)")
    outlines = section.locator("vz-histogram-timeseries svg path.outline[d]")
    _wait_until(lambda: outlines.count() >= 4, 60, "the histograms to be drawn")
    for run in ("mlp_sgd_0.1", "mlp_sgd_1.0"):  # each card is labelled with its run
        assert section.get_by_text(run, exact=True).count() == 1, f"no card for {run}"
    path = _save(page, section, "histograms", errors)
    print(f"saved {path.relative_to(ROOT)}")
