"""A playground for the cost model of :mod:`dpkit.scaling` (lesson 09).

:func:`panel` shows dropdowns for the model card, the hardware preset and the all-reduce
algorithm, a slider for the overlap, the batch per device and the largest device count; every
change redraws the predicted speed-up curve, each count's step split into compute, bandwidth
and latency, and a line with the efficiency at the largest count and the term that dominates.

Where nobody watches widgets (a terminal, a test run, nbval; see
:func:`dpkit.plumbing.notebook.frontend`) it prints the same prediction as a table instead and
returns the :class:`dpkit.scaling.Prediction`, so write
``prediction = scaling_panel.panel(...)`` (as the last line of a cell, the prediction would also
be shown as its long ``repr``).
"""

from __future__ import annotations

import html

from dpkit import cards, scaling
from dpkit.plumbing import checks, notebook

#: the largest device counts the panel offers; it predicts 1, 2, 4, ... up to the chosen one
DEVICE_COUNTS = tuple(2**i for i in range(11))  # 1 .. 1024
DEFAULTS = {"model": "resnet50", "hardware": "p100_roce25", "algorithm": "ring", "devices": 1024}
DEFAULTS.update(per_device_batch=64, overlap=0.0)


def device_limit(hardware: str) -> int:
    """The most devices a hardware preset can hold: all of :data:`DEVICE_COUNTS` if its
    nodes are networked, else one node's devices (a power of two at most)."""
    hw = cards.HARDWARE[hardware]
    if hw.inter is not None:
        return DEVICE_COUNTS[-1]
    return max(n for n in DEVICE_COUNTS if n <= hw.devices_per_node)


def check(**settings) -> dict:
    """The panel's settings (:data:`DEFAULTS` for those not given), checked before anything
    is built: a choice the panel does not offer is a ``ValueError`` listing the valid ones."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; choose from {', '.join(DEFAULTS)}.")
    s = {**DEFAULTS, **settings}
    model, hardware, algorithm = s["model"], s["hardware"], s["algorithm"]
    devices, per_device_batch, overlap = s["devices"], s["per_device_batch"], s["overlap"]
    checks.one_of(model, cards.MODEL_NAMES, "model")
    checks.one_of(hardware, cards.HARDWARE, "hardware")
    checks.one_of(algorithm, scaling.ALGORITHMS, "algorithm")
    if not checks.is_whole(devices) or devices not in DEVICE_COUNTS:
        raise ValueError(
            f"devices (the largest device count) must be one of "
            f"{', '.join(map(str, DEVICE_COUNTS))}; got {devices!r}."
        )
    limit = device_limit(hardware)
    if devices > limit:
        networked = [k for k in cards.HARDWARE if device_limit(k) >= devices]
        raise ValueError(
            f"hardware {hardware!r} is one node of {cards.HARDWARE[hardware].devices_per_node} "
            f"devices: choose devices <= {limit}, or a hardware preset with a network: "
            f"{', '.join(networked)}."
        )
    checks.whole(per_device_batch, "per_device_batch", 1, "per_device_batch=64")
    if not checks.is_real(overlap) or not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be a fraction from 0 to 1, got {overlap!r}; e.g. 0.5.")
    return {**s, "overlap": float(overlap)}


def predict(**settings) -> scaling.Prediction:
    """The prediction the panel shows: weak scaling over 1, 2, 4, ... ``devices`` devices.

    The settings (:data:`DEFAULTS` for those not given): ``model`` (one of
    :data:`dpkit.cards.MODEL_NAMES`), ``hardware`` (a key of :data:`dpkit.cards.HARDWARE`),
    ``algorithm``, ``devices`` (the largest count, one of :data:`DEVICE_COUNTS`),
    ``per_device_batch`` and ``overlap`` (those of :func:`dpkit.scaling.step`).
    """
    c = check(**settings)
    model, hardware = cards.model_card(c["model"]), cards.HARDWARE[c["hardware"]]
    options = {k: c[k] for k in ("per_device_batch", "algorithm", "overlap")}
    return scaling.predict(
        model, hardware, [n for n in DEVICE_COUNTS if n <= c["devices"]], **options
    )


def summary(prediction: scaling.Prediction) -> str:
    """One line: the efficiency at the largest count and the term that dominates its step."""
    last = prediction.steps[-1]
    n = last.devices
    return (
        f"On {n} device{'s' if n > 1 else ''}: {prediction.speedup(n):.1f}x the speed of "
        f"{prediction.base.devices}, {prediction.efficiency(n):.0%} efficiency; "
        f"{last.dominant} dominates the step."
    )


class ScalingPanel:
    """The controls, the plot and the summary line; :meth:`show` displays them.

    Each control is an ipywidgets attribute named after its setting (``model``, ``hardware``,
    ``algorithm``, ``overlap``, ``per_device_batch``, ``devices``); changing one redraws.
    ``prediction`` holds what the controls predict now, ``figure`` the last plot drawn.
    Takes the starting values as :func:`panel` does.
    """

    def __init__(self, **settings):
        import ipywidgets as w

        s = check(**settings)
        self.model = w.Dropdown(
            options=[(cards.DISPLAY.get(n, n), n) for n in cards.MODEL_NAMES],
            value=s["model"],
            description="model",
        )
        self.hardware = w.Dropdown(
            options=[(hw.name, key) for key, hw in cards.HARDWARE.items()],
            value=s["hardware"],
            description="hardware",
            layout=w.Layout(width="460px"),
        )
        self.algorithm = w.Dropdown(
            options=list(scaling.ALGORITHMS), value=s["algorithm"], description="algorithm"
        )
        self.overlap = w.FloatSlider(
            value=s["overlap"], min=0, max=1, step=0.05, description="overlap"
        )
        self.per_device_batch = w.BoundedIntText(
            value=s["per_device_batch"], min=1, max=65536, description="batch/device"
        )
        self.devices = w.Dropdown(
            options=self._counts(s["hardware"]), value=s["devices"], description="devices up to"
        )
        self.summary = w.HTML()
        self.plot = w.Output()
        self.prediction: scaling.Prediction | None = None
        self.figure = None
        self._quiet = False
        for name in DEFAULTS:
            getattr(self, name).observe(self._changed, names="value")
        numbers = w.HBox([self.devices, self.per_device_batch, self.overlap])
        rows = [w.HBox([self.model, self.algorithm]), self.hardware, numbers, self.summary]
        self.widget = w.VBox([*rows, self.plot])
        self.update()

    @staticmethod
    def _counts(hardware: str) -> list[int]:
        return [n for n in DEVICE_COUNTS if n <= device_limit(hardware)]

    def settings(self) -> dict:
        """The controls' current values, as :func:`predict` takes them."""
        return {name: getattr(self, name).value for name in DEFAULTS}

    def _changed(self, change) -> None:
        if self._quiet:
            return
        if change["owner"] is self.hardware:  # a single node holds only so many devices
            counts = self._counts(self.hardware.value)
            self._quiet = True
            try:
                value = min(self.devices.value, counts[-1])
                self.devices.options = counts
                self.devices.value = value
            finally:
                self._quiet = False
        self.update()

    def update(self) -> None:
        """Predict for the controls' values; redraw the summary line and the plot."""
        import matplotlib.pyplot as plt
        from IPython.display import clear_output

        try:
            prediction = predict(**self.settings())
        except ValueError as err:  # the controls should not allow it; say so, keep the plot
            self.summary.value = f"<b>cannot predict:</b> {html.escape(str(err))}"
            return
        self.prediction = prediction
        self.summary.value = f"<b>{html.escape(summary(prediction))}</b>"
        with self.plot:
            clear_output(wait=True)
            self.figure, axes = plt.subplots(1, 2, figsize=(11, 3.4))
            prediction.plot(axes)
            self.figure.tight_layout()
            plt.show()
        plt.close(self.figure)

    def show(self) -> None:
        """Display the panel (in a Jupyter frontend)."""
        from IPython.display import display

        display(self.widget)


def panel(
    model: str = DEFAULTS["model"],
    hardware: str = DEFAULTS["hardware"],
    algorithm: str = DEFAULTS["algorithm"],
    devices: int = DEFAULTS["devices"],
    per_device_batch: int = DEFAULTS["per_device_batch"],
    overlap: float = DEFAULTS["overlap"],
) -> scaling.Prediction | None:
    """Show the cost model's playground, starting from these settings (see :func:`predict`);
    without a frontend, print its table instead and return the
    :class:`dpkit.scaling.Prediction` printed (with widgets ``None``: the panel's
    ``prediction`` follows the controls; use :class:`ScalingPanel` to keep it).
    """
    given = dict(model=model, hardware=hardware, algorithm=algorithm, devices=devices)
    s = check(**given, per_device_batch=per_device_batch, overlap=overlap)
    if notebook.frontend(widgets=True):
        ScalingPanel(**s).show()
        return None
    prediction = predict(**s)
    print(prediction.table())
    print(f"\n{summary(prediction)}")
    return prediction
