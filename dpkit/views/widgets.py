"""Notebook controls for throughput sweeps: pick devices, press Run, watch it scale.

Introduced in lesson 05. Two entry points, both built on :class:`dpkit.bench.Sweep`:

* :func:`live_sweep` runs a sweep inside the cell and shows it live: a progress bar,
  a status line, the throughput plot redrawn as each measurement window arrives, and
  the results table. Stop it with the kernel's interrupt button (the child is killed).
* :class:`SweepPanel` is a playground: a device-count picker, model, strategy, batch and
  scaling controls, a Run button and a Stop button that kills the running child. The
  sweep runs in a background thread, so the notebook stays usable while it runs.

ipywidgets is imported only when a widget is made. Where nobody watches (a test run,
papermill, a terminal), both fall back to text: :func:`live_sweep` prints its progress and
the table, :class:`SweepPanel` what it would run. A kernel cannot tell whether a browser is
attached, so :func:`frontend` guesses, and ``DPKIT_WIDGETS=text`` forces text (set it for
papermill) or ``=widgets`` widgets.
"""

from __future__ import annotations

import html
import io
import threading
import time

from dpkit import bench, models
from dpkit.plumbing import contract, notebook
from dpkit.report import COLUMNS, Report
from dpkit.views import figures

#: Strategies and device counts the panel offers (its models: every key of models.MODELS).
PANEL_STRATEGIES = ("towers", "mirrored")
PANEL_DEVICE_COUNTS = (1, 2, 4, 8)


def frontend() -> bool:
    """Whether widgets will be seen: inside a Jupyter kernel, ipywidgets installed
    (``DPKIT_WIDGETS=text`` or ``=widgets`` overrides the guess: :mod:`dpkit.plumbing.notebook`)."""
    return notebook.frontend(widgets=True)


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError as err:
        raise ImportError(
            "dpkit.views.widgets needs ipywidgets: pip install 'dpkit[lab]' (or set "
            "DPKIT_WIDGETS=text for the text version)."
        ) from err
    return ipywidgets


def _display(obj) -> None:
    from IPython.display import display

    display(obj)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _table_html(report: Report) -> str:
    pad = "padding:2px 12px;text-align:right"
    rows = ["".join(f"<th style='{pad}'>{h}</th>" for h in COLUMNS)]
    for cells in report.cells():
        cells += [""] * (len(COLUMNS) - len(cells))  # a failed run has only its status
        rows.append("".join(f"<td style='{pad}'>{html.escape(c)}</td>" for c in cells))
    return "<table class='dpkit-results'>" + "".join(f"<tr>{r}</tr>" for r in rows) + "</table>"


class LiveView:
    """Progress bar, status line, throughput plot and results table for one sweep.

    Feed it every :class:`dpkit.bench.Event` with :meth:`update`. The plot is redrawn at
    most every ``redraw_seconds`` while windows arrive, and always when a run ends.
    """

    def __init__(self, redraw_seconds: float = 0.5):
        from matplotlib.figure import Figure

        w = _ipywidgets()
        self.progress = w.IntProgress(value=0, min=0, max=1, description="progress")
        self.status = w.HTML(value="ready")
        self.image = w.Image(format="png", layout=w.Layout(width="810px"))
        self.table = w.HTML(value="")
        self.box = w.VBox([w.HBox([self.progress, self.status]), self.image, self.table])
        self._figure = Figure(figsize=(9, 3.4))
        self._redraw_seconds = redraw_seconds
        self._last_draw = 0.0

    def begin(self, sweep: bench.Sweep) -> None:
        """Show ``sweep`` from its start (the view can show one sweep after another)."""
        self.sweep = sweep
        self._live: dict[int, list[float]] = {}  # window rates of the run still going
        self._done_steps = 0
        self.progress.max = sum(c.steps for c in sweep.configs)
        self.progress.value = 0
        self.progress.bar_style = ""
        self.table.value = ""
        self.status.value = f"starting: {len(sweep.configs)} run(s)"
        self._draw()

    def _draw(self) -> None:
        self.sweep.report.plot(self._figure, live=self._live)
        self.image.value = _png(self._figure)
        self._last_draw = time.perf_counter()

    def update(self, event: bench.Event) -> None:
        self.status.value = html.escape(bench.describe_event(event))
        n = event.config.devices
        if isinstance(event.record, contract.ThroughputWindow):
            self._live.setdefault(n, []).append(event.record.examples_per_sec)
            self.progress.value = self._done_steps + event.record.step
            if time.perf_counter() - self._last_draw >= self._redraw_seconds:
                self._draw()
        elif event.kind == "result":
            self._live.pop(n, None)
            self._done_steps += event.config.steps
            self.progress.value = self._done_steps
            if not event.result.ok:
                self.progress.bar_style = "warning"
            self.table.value = _table_html(self.sweep.report)
            self._draw()

    def end(self, stopped: bool = False) -> None:
        results = self.sweep.report.results
        failed = [r for r in results if not r.ok]
        if stopped:
            text, style = "stopped: the running child was killed", "warning"
        elif failed:
            text, style = f"finished with {len(failed)} failed run(s); see the table", "danger"
        else:
            text, style = f"finished: {len(results)} run(s)", "success"
        self.status.value, self.progress.bar_style = text, style


#: What the sweep's plot (:meth:`dpkit.report.Report.plot`) shows, for a reader who cannot see it.
SWEEP_ALT = (
    "Two panels. Left: a bar per device count, the median examples per second, with a dot "
    "for each measurement window. Right: the measured speed-up against the smallest device "
    "count, a dashed grey line for the ideal, each point labelled with its efficiency."
)


def live_sweep(device_counts=(1, 2, 4), *, alt: str = SWEEP_ALT, **kwargs) -> Report:
    """Run a sweep in this cell, showing it live; return its :class:`dpkit.report.Report`.

    Takes the arguments of :class:`dpkit.bench.Sweep`. Interrupt the kernel to stop
    it: the running child is killed and the results so far are returned. ``alt``: the alt
    text of the plot the text version shows at the end (:mod:`dpkit.views.figures`).
    """
    sweep = bench.Sweep(device_counts, **kwargs)  # bad input fails here, before any child
    if not frontend():
        return _text_sweep(sweep, alt)
    view = LiveView()
    _display(view.box)
    view.begin(sweep)
    stopped = False
    try:
        for event in sweep.events():
            view.update(event)
    except KeyboardInterrupt:
        stopped = True
    view.end(stopped)
    return sweep.report


def _text_sweep(sweep: bench.Sweep, alt: str = SWEEP_ALT) -> Report:
    try:
        for event in sweep.events():
            if not isinstance(event.record, contract.ThroughputReady):
                print(bench.describe_event(event), flush=True)
    except KeyboardInterrupt:
        print("interrupted: the running child was killed.")
    print(f"\n{sweep.report.table()}")
    if sweep.report.results and notebook.shell() is not None:
        _display(figures.image(_png(sweep.report.plot()), alt))
    return sweep.report


class SweepPanel:
    """Controls to run a scaling sweep from the notebook, and a live view of it.

    Example::

        panel = widgets.SweepPanel()
        panel.show()          # pick devices, model, ...; press Run; Stop kills the child

    The keywords are the controls' starting values (``max_devices``: the sweep runs 1, 2, 4,
    ... up to it); ``**config`` holds further :class:`dpkit.report.Config` fields (``windows``,
    ``timeout``, ...).
    """

    def __init__(
        self,
        *,
        max_devices: int = 4,
        model: str = "lenet5",
        strategy: str = "towers",
        batch: int = 256,
        scaling: str = "strong",
        **config,
    ):
        offered = {"max_devices": PANEL_DEVICE_COUNTS, "model": tuple(models.MODELS)}
        offered["strategy"] = PANEL_STRATEGIES
        for name, value in (("max_devices", max_devices), ("model", model), ("strategy", strategy)):
            if value not in offered[name]:
                raise ValueError(f"{name} must be one of {offered[name]}, got {value!r}.")
        self._config = config
        self._settings = dict(
            max_devices=max_devices, model=model, strategy=strategy, batch=batch, scaling=scaling
        )
        self._make_sweep(**self._settings)  # check the starting values now
        self.sweep: bench.Sweep | None = None
        self.thread: threading.Thread | None = None
        self.widget = None

    def _make_sweep(self, max_devices, **settings) -> bench.Sweep:
        return bench.Sweep(bench.powers_of_two(max_devices), **settings, **self._config)

    def _build(self):
        w = _ipywidgets()
        s = self._settings  # each control is an attribute named after its setting
        self.max_devices = w.ToggleButtons(
            options=list(PANEL_DEVICE_COUNTS),
            value=s["max_devices"],
            description="devices up to",
            style={"button_width": "48px", "description_width": "initial"},
        )
        self.model = w.Dropdown(options=list(models.MODELS), value=s["model"], description="model")
        self.strategy = w.Dropdown(
            options=list(PANEL_STRATEGIES), value=s["strategy"], description="strategy"
        )
        self.batch = w.BoundedIntText(value=s["batch"], min=1, max=65536, description="batch")
        self.scaling = w.ToggleButtons(
            options=[("strong (global batch)", "strong"), ("weak (per device)", "weak")],
            value=s["scaling"],
            description="scaling",
        )
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop")
        self.stop_button.disabled = True
        self.view = LiveView()
        self.run_button.on_click(lambda _: self.run())
        self.stop_button.on_click(lambda _: self.stop())
        buttons = w.HBox([self.run_button, self.stop_button])
        rows = [w.HBox([self.model, self.strategy]), w.HBox([self.batch, self.scaling]), buttons]
        controls = w.VBox([self.max_devices, *rows])
        self.widget = w.VBox([controls, self.view.box])

    def settings(self) -> dict:
        """The controls' current values (the starting values in text mode)."""
        if self.widget is None:
            return dict(self._settings)
        return {name: getattr(self, name).value for name in self._settings}

    def command(self) -> str:
        """The same sweep on the command line."""
        s = self.settings()
        weak = " --weak" if s["scaling"] == "weak" else ""
        return (
            f"python -m dpkit bench --up-to {s['max_devices']} --model {s['model']} "
            f"--strategy {s['strategy']} --batch {s['batch']}{weak}"
        )

    def show(self) -> None:
        """Display the panel; in text mode print what it would run instead."""
        if not frontend():
            print(
                "No widget display here (DPKIT_WIDGETS=text, or not a Jupyter kernel), so "
                "the panel is not shown. Open the notebook in JupyterLab to use it, or run "
                f"the same sweep from a terminal:\n  {self.command()}"
            )
            return
        if self.widget is None:
            self._build()
        _display(self.widget)

    def run(self) -> None:
        """Start a sweep with the controls' values in a background thread."""
        if self.thread is not None and self.thread.is_alive():
            return
        if self.widget is None:
            self._build()
        try:
            sweep = self._make_sweep(**self.settings())
        except ValueError as err:
            self.view.status.value = f"<b>cannot run:</b> {html.escape(str(err))}"
            return
        self.sweep = sweep
        self.run_button.disabled = True
        self.stop_button.disabled = False
        self.view.begin(sweep)
        self.thread = threading.Thread(target=self._work, args=(sweep,), daemon=True)
        self.thread.start()

    def _work(self, sweep: bench.Sweep) -> None:
        try:
            for event in sweep.events():
                self.view.update(event)
            self.view.end(sweep.stopped)
        except Exception as err:  # show it: a thread's traceback would go unseen
            self.view.status.value = f"<b>error:</b> {html.escape(repr(err))}"
            self.view.progress.bar_style = "danger"
        finally:
            self.run_button.disabled = False
            self.stop_button.disabled = True

    def stop(self) -> None:
        """Kill the running child; the sweep starts no further runs."""
        if self.sweep is not None:
            self.sweep.stop()

    def wait(self, timeout: float | None = None) -> Report | None:
        """Block until the running sweep ends; return its report."""
        if self.thread is not None:
            self.thread.join(timeout)
        return self.report

    @property
    def report(self) -> Report | None:
        return self.sweep.report if self.sweep is not None else None
