"""Show a matplotlib figure with alt text that says what it shows, and not by colour alone.

Introduced in lesson 00. Every figure a lesson draws ends in ``figures.show(fig, alt=...)``
instead of ``plt.show()``: the figure is displayed as a PNG whose output metadata carries
the alt text (``{"image/png": {"alt": ...}}``), so that the stored notebook, the website
built from it (``make site``) and a screen reader all have words for the picture, written
in the cell that draws it. ``tools/alt_text.py`` copies each cell's ``alt=`` text into its
stored image outputs; ``tests/repo/test_figures.py`` checks every image a lesson stores has it.

Before showing, :func:`show` gives the bars of each fill colour a hatch pattern of their own,
and the labelled lines of one plot that differ only in colour a line style each (the legend
follows), so that stacked bars, coloured timelines and families of curves can be told apart
in grey or by a reader who does not see the colours.
"""

from __future__ import annotations

#: Hatch patterns given to fill colours, in order of first appearance.
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--", "**", "||")

#: Line styles given to lines that differ only in colour, after the first of them.
LINE_STYLES = ("--", ":", "-.", (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1)))

#: The output metadata key a figure's alt text is stored under (per MIME type).
MIME = "image/png"


def _need_alt(alt) -> str:
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError(
            f"figures.show needs alt text that says what the figure shows, got {alt!r}: "
            'e.g. figures.show(fig, alt="Line plot of the training loss against the step").'
        )
    return " ".join(alt.split())


def _key(patch) -> tuple:
    from matplotlib.colors import to_rgba

    return tuple(round(c, 4) for c in to_rgba(patch.get_facecolor()))


def hatch_by_colour(fig) -> dict:
    """Give each fill colour of ``fig``'s bars a hatch of its own, in the legend too.

    Only bars (``ax.bar``, ``ax.barh``) change: a diagram's boxes, drawn as patches with
    their labels written on them, keep their plain fills. Returns ``{rgba colour: hatch}``;
    with one bar colour nothing changes (``{}``).
    """
    from matplotlib.container import BarContainer
    from matplotlib.patches import Patch

    bars = [
        bar
        for ax in fig.axes
        for container in ax.containers
        if isinstance(container, BarContainer)
        for bar in container
        if bar.get_fill() and _key(bar)[3] > 0
    ]
    colours = dict.fromkeys(_key(bar) for bar in bars)
    if len(colours) < 2:
        return {}
    colours = dict(zip(colours, HATCHES * (len(colours) // len(HATCHES) + 1)))
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    handles = [h for leg in legends if leg for h in leg.legend_handles if isinstance(h, Patch)]
    for patch in bars + handles:
        key = _key(patch)
        if colours.get(key):
            edge = "black" if sum(key[:3]) > 1.2 else "white"
            patch.set_hatch(colours[key])
            patch.set_edgecolor(edge)
            if hasattr(patch, "set_hatchcolor"):  # matplotlib 3.11 keeps a legend copy's own
                patch.set_hatchcolor(edge)
            patch.set_linewidth(0.4)
    return colours


def style_by_line(fig) -> int:
    """Labelled lines (and outline steps) of one axes that share a line style, marker and
    width, so differ only in colour, get line styles of their own, the legend too; the first
    of each such group keeps its style, and styles already in the axes are not reused.
    Returns how many lines changed."""
    from matplotlib.patches import StepPatch

    changed = 0
    for ax in fig.axes:
        curves = [line for line in ax.get_lines() if line.get_linestyle() not in ("None", "")]
        curves += [p for p in ax.patches if isinstance(p, StepPatch) and not p.get_fill()]
        labelled = [c for c in curves if not c.get_label().startswith("_")]
        used = {str(c.get_linestyle()) for c in curves}
        free = [style for style in LINE_STYLES if str(style) not in used]
        groups: dict = {}
        for curve in labelled:
            marker = curve.get_marker() if hasattr(curve, "get_marker") else None
            key = (str(curve.get_linestyle()), marker, round(curve.get_linewidth(), 2))
            groups.setdefault(key, []).append(curve)
        legend = ax.get_legend()
        handles = {}
        if legend:
            handles = {t.get_text(): h for t, h in zip(legend.texts, legend.legend_handles)}
        for members in groups.values():
            for curve in members[1:]:
                if not free:
                    break
                style = free.pop(0)
                curve.set_linestyle(style)
                if curve.get_label() in handles and handles[curve.get_label()] is not None:
                    handles[curve.get_label()].set_linestyle(style)
                changed += 1
    return changed


def show(fig, alt: str) -> None:
    """Display ``fig`` below the cell as a PNG carrying ``alt`` as its alt text, then close it.

    ``alt`` says what the figure shows (the kind of plot, its axes, what each series or
    colour is), not what a reader should conclude: that is computed and printed by the cell.
    """
    import matplotlib.pyplot as plt
    from IPython.display import display

    alt = _need_alt(alt)
    hatch_by_colour(fig)
    style_by_line(fig)
    display(fig, metadata={MIME: {"alt": alt}})
    plt.close(fig)


def image(png: bytes, alt: str):
    """An IPython ``Image`` of PNG bytes that carries ``alt`` (for code that draws to bytes)."""
    from IPython.display import Image

    return Image(data=png, format="png", metadata={"alt": _need_alt(alt)})
