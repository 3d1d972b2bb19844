"""Diagrams drawn with matplotlib, for the lessons' pictures (lessons 00, 02 and 07)."""

from __future__ import annotations

from dpkit.plumbing import checks

_LAYER_COLOURS = ("#8ecae6", "#219ebc", "#126782")
_DEVICE_EDGE = "#555555"


def _device(ax, x, y, w, h, label):
    from matplotlib.patches import FancyBboxPatch

    style = "round,pad=0.02,rounding_size=0.08"
    ax.add_patch(
        FancyBboxPatch((x, y), w, h, boxstyle=style, fill=False, ec=_DEVICE_EDGE, lw=1.2, ls="--")
    )
    ax.text(x + w / 2, y - 0.06, label, ha="center", va="top", fontsize=8, color=_DEVICE_EDGE)


def _layers(ax, x, y, w, which=(0, 1, 2)):
    # Data flows downwards, so the first layer is drawn on top.
    for row, i in enumerate(reversed(which)):
        ax.add_patch(_rect(x, y + row * 0.42, w, 0.32, _LAYER_COLOURS[i]))
        text = {"ha": "center", "va": "center", "fontsize": 7, "color": "white" if i else "black"}
        ax.text(x + w / 2, y + row * 0.42 + 0.16, f"layer {i + 1}", **text)


def _rect(x, y, w, h, colour):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, fc=colour, ec="black", lw=0.6)


def _batch(ax, x, y, w, label, colour="#ffb703"):
    ax.add_patch(_rect(x, y, w, 0.25, colour))
    ax.text(x + w / 2, y + 0.125, label, ha="center", va="center", fontsize=7)


def _arrow(ax, start, end, colour="black"):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", color=colour, lw=1))


def parallelism_taxonomy():
    """Three panels: data, model and hybrid parallelism across devices (a ``Figure``)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    for ax, title in zip(axes, ("Data parallelism", "Model parallelism", "Hybrid")):
        ax.set_xlim(0, 4)
        ax.set_ylim(-0.2, 3.75)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title, fontsize=11)

    ax = axes[0]  # every device holds the whole model and sees part of the batch
    _batch(ax, 0.5, 3.2, 3.0, "global batch")
    for i, x in enumerate((0.4, 2.2)):
        _batch(ax, x + 0.1, 2.45, 1.2, f"shard {i}")
        _arrow(ax, (x + 0.7, 3.2), (x + 0.7, 2.72))
        _device(ax, x, 0.8, 1.4, 1.45, f"device {i}")
        _layers(ax, x + 0.15, 0.9, 1.1)
        _arrow(ax, (x + 0.7, 2.45), (x + 0.7, 2.3))
    averaged = "gradients averaged\n(all-reduce)"
    ax.text(2.0, 0.05, averaged, ha="center", va="center", fontsize=8, color="#b5179e")
    _arrow(ax, (1.1, 0.5), (1.6, 0.3), "#b5179e")
    _arrow(ax, (2.9, 0.5), (2.4, 0.3), "#b5179e")

    ax = axes[1]  # the model is cut into pieces, each on its own device
    _batch(ax, 1.2, 3.2, 1.6, "whole batch")
    _device(ax, 0.3, 1.3, 1.5, 1.3, "device 0")
    _layers(ax, 0.5, 1.45, 1.1, which=(0, 1))
    _device(ax, 2.2, 1.3, 1.5, 1.3, "device 1")
    _layers(ax, 2.4, 1.87, 1.1, which=(2,))
    _arrow(ax, (2.0, 3.2), (1.05, 2.72))
    _arrow(ax, (1.6, 1.6), (2.4, 2.0))
    ax.text(2.0, 0.55, "activations flow\nfrom device to device", ha="center", fontsize=8)

    ax = axes[2]  # groups of devices split the model; the groups split the batch
    _batch(ax, 0.5, 3.2, 3.0, "global batch")
    for g, x in enumerate((0.25, 2.1)):
        _batch(ax, x + 0.25, 2.55, 1.15, f"shard {g}")
        _arrow(ax, (x + 0.82, 3.2), (x + 0.82, 2.82))
        _device(ax, x, 1.55, 1.65, 0.75, f"devices {2 * g},{2 * g + 1}")
        _layers(ax, x + 0.1, 1.75, 0.7, which=(0,))
        _layers(ax, x + 0.85, 1.75, 0.7, which=(1,))
    hybrid = (
        "model split inside a group,\nbatch split across groups,\ngradients averaged across groups"
    )
    ax.text(2.0, 0.55, hybrid, ha="center", fontsize=8)
    fig.tight_layout()
    return fig


def cluster_roles(num_workers: int = 2, num_ps: int = 2):
    """Two panels: a ``ParameterServerStrategy`` cluster and a ``MultiWorkerMirrored`` one.

    Introduced in lesson 07. Left: the chief sends steps to the workers, which read weights
    from and send updates to the ps tasks. Right: workers only, all-reducing gradients.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    def box(ax, x, y, w, label, colour):
        ax.add_patch(
            FancyBboxPatch((x, y), w, 0.5, boxstyle="round,pad=0.03", fc=colour, ec="black", lw=0.8)
        )
        ax.text(x + w / 2, y + 0.25, label, ha="center", va="center", fontsize=8)

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    width = 1.3
    worker_x = [i * 1.7 for i in range(num_workers)]
    span = worker_x[-1] + width

    ax = axes[0]
    box(ax, span / 2 - width / 2, 2.4, width, "chief\n(your Python loop)", "#ffb703")
    for i, x in enumerate(worker_x):
        box(ax, x, 1.2, width, f"worker:{i}\nforward, backward", _LAYER_COLOURS[0])
        _arrow(ax, (span / 2, 2.4), (x + width / 2, 1.75))
    ps_x = [span * (j + 0.5) / num_ps - width / 2 for j in range(num_ps)]
    for j, x in enumerate(ps_x):
        box(ax, x, 0.0, width, f"ps:{j}\nvariables", "#cdb4db")
        both_ways = dict(arrowstyle="<->", color=_DEVICE_EDGE, lw=0.8)
        for wx in worker_x:
            ax.annotate("", (x + width / 2, 0.55), (wx + width / 2, 1.15), arrowprops=both_ways)
    ax.text(span / 2, 2.1, "schedule(step)", ha="center", fontsize=7, color=_DEVICE_EDGE)
    ax.text(span / 2, 0.85, "weights down, updates up", ha="center", fontsize=7)
    ax.set_title("ParameterServerStrategy: asynchronous", fontsize=10)

    ax = axes[1]
    for i, x in enumerate(worker_x):
        box(ax, x, 1.2, width, f"worker:{i}\nall variables", _LAYER_COLOURS[0])
    for a, b in zip(worker_x, worker_x[1:]):  # neighbours exchange gradient chunks
        _arrow(ax, (a + width + 0.03, 1.55), (b - 0.03, 1.55), _DEVICE_EDGE)
        _arrow(ax, (b - 0.03, 1.35), (a + width + 0.03, 1.35), _DEVICE_EDGE)
    note = "all-reduce the gradients (no ps):\nevery copy takes the same step"
    ax.text(span / 2, 0.6, note, ha="center", fontsize=7)
    ax.set_title("MultiWorkerMirroredStrategy: synchronous", fontsize=10)
    for ax in axes:
        ax.set_xlim(-0.2, span + 0.2)
        ax.set_ylim(-0.2, 3.1)
        ax.axis("off")
    fig.tight_layout()
    return fig


_GRADIENT_COLOUR = "#b5179e"
_HOME_COLOUR = "#cdb4db"
_VARIABLE_HOMES = ("cpu", "device0")


def _check_tower_step_args(num_devices, variables_on, device_names, global_batch_size):
    num_devices = checks.whole(num_devices, "num_devices", 1, "e.g. 2 (one tower per device)")
    if not isinstance(variables_on, str) or variables_on.lower() not in _VARIABLE_HOMES:
        raise ValueError(
            "variables_on must be 'cpu' or 'device0' (where the variables live), "
            f"got {variables_on!r}."
        )
    if device_names is None:
        device_names = [f"GPU:{i}" for i in range(num_devices)]
    device_names = [str(name) for name in device_names]
    if len(device_names) != num_devices:
        raise ValueError(
            f"device_names has {len(device_names)} names for num_devices={num_devices}; "
            "pass one name per device (e.g. setup.devices) or leave it out."
        )
    if global_batch_size is not None:
        what, into = f"global_batch_size={global_batch_size!r}", f"into {num_devices} towers"
        instead = ", or None to leave the sizes out"
        checks.divides(global_batch_size, num_devices, what, into, instead)
    return variables_on.lower(), device_names


def tower_step(
    num_devices: int = 4,
    variables_on: str = "cpu",
    device_names=None,
    global_batch_size: int | None = None,
):
    """One synchronous tower step: split, forward/backward per device, average, one update.

    Introduced in lesson 02. Top to bottom: the global batch is split into one shard per
    device; each device runs its tower (forward and backward pass on its shard); every
    tower sends its gradients to the device that holds the variables, which averages them
    and applies one update; at the next step every tower reads the updated variables.

    ``variables_on`` is ``"cpu"`` (the CPU as parameter server) or ``"device0"`` (the first
    device, which also runs tower 0); ``device_names`` label the devices (e.g.
    ``setup.devices``; by default ``GPU:0``, ``GPU:1``, ...); a ``global_batch_size`` (a
    multiple of ``num_devices``) labels the batch and the shards with their sizes. In the
    ``Figure`` returned each tower's box has the gid ``tower_i``, the variables' ``variables``.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyBboxPatch

    where, names = _check_tower_step_args(
        num_devices, variables_on, device_names, global_batch_size
    )
    column = 2.0
    span = column * num_devices
    fig, ax = plt.subplots(figsize=(max(7.0, 1.9 * num_devices), 4.6))

    def box(x, y, w, h, label, colour, gid):
        patch = FancyBboxPatch(
            (x, y), w, h, boxstyle="round,pad=0.03", fc=colour, ec="black", lw=0.8
        )
        patch.set_gid(gid)
        ax.add_patch(patch)
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=8)

    sizes = global_batch_size is not None
    batch_label = f"global batch ({global_batch_size} examples)" if sizes else "global batch"
    _batch(ax, 0.2, 5.0, span - 0.4, batch_label)
    for i, name in enumerate(names):
        centre = column * (i + 0.5)
        shard = f"shard {i} ({global_batch_size // num_devices})" if sizes else f"shard {i}"
        _batch(ax, centre - 0.6, 4.35, 1.2, shard)
        _arrow(ax, (centre, 5.0), (centre, 4.62))
        _device(ax, centre - 0.8, 2.3, 1.6, 1.75, "")
        ax.text(centre, 2.55, name, ha="center", va="center", fontsize=7, color=_DEVICE_EDGE)
        tower = f"tower_{i}\nforward +\nbackward"
        box(centre - 0.65, 2.85, 1.3, 0.85, tower, _LAYER_COLOURS[0], f"tower_{i}")
        _arrow(ax, (centre, 4.35), (centre, 3.74))
        # Gradients go down on the left of each device, the updated variables come up on the right.
        _arrow(ax, (centre - 0.6, 2.26), (centre - 0.6, 1.36), _GRADIENT_COLOUR)
        dashed = dict(arrowstyle="->", color=_DEVICE_EDGE, lw=1, ls="--")
        ax.annotate("", (centre + 0.6, 2.26), (centre + 0.6, 1.36), arrowprops=dashed)

    home = "the CPU" if where == "cpu" else f"{names[0]} (also runs tower_0)"
    variables = f"variables on {home}\naverage the {num_devices} gradients, apply one update"
    box(0.3, 0.45, span - 0.6, 0.85, variables, _HOME_COLOUR, "variables")
    ax.set_xlim(0, span)
    ax.set_ylim(0.3, 5.4)
    ax.axis("off")
    ax.set_title(f"One tower step on {num_devices} device{'s' * (num_devices > 1)}", fontsize=11)
    updated = "updated variables, read by every tower at the next step"
    handles = [
        Line2D([], [], color=_GRADIENT_COLOUR, lw=1.2, label="gradients, this step"),
        Line2D([], [], color=_DEVICE_EDGE, lw=1.2, ls="--", label=updated),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
