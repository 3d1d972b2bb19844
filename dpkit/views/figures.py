"""Show a matplotlib figure with alt text that says what it shows, and not by colour alone.

Introduced in lesson 00. Every figure a lesson draws ends in ``figures.show(fig, alt=...)``
instead of ``plt.show()``: the figure is displayed as a PNG whose output metadata carries
the alt text (``{"image/png": {"alt": ...}}``), so that the stored notebook, the website
built from it (``make site``) and a screen reader all have words for the picture, written
in the cell that draws it. ``tools/alt_text.py`` copies each cell's ``alt=`` text into its
stored image outputs; ``tests/repo/test_figures.py`` checks every image a lesson stores has it.

Before showing, :func:`show` gives the bars of each fill colour a hatch pattern of their own
(the same pattern in the legend), so that stacked bars and coloured timelines can be told
apart in grey or by a reader who does not see the colours.
"""

from __future__ import annotations

#: Hatch patterns given to fill colours, in order of first appearance.
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--", "**", "||")

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


def show(fig, alt: str) -> None:
    """Display ``fig`` below the cell as a PNG carrying ``alt`` as its alt text, then close it.

    ``alt`` says what the figure shows (the kind of plot, its axes, what each series or
    colour is), not what a reader should conclude: that is computed and printed by the cell.
    """
    import matplotlib.pyplot as plt
    from IPython.display import display

    alt = _need_alt(alt)
    hatch_by_colour(fig)
    display(fig, metadata={MIME: {"alt": alt}})
    plt.close(fig)


def image(png: bytes, alt: str):
    """An IPython ``Image`` of PNG bytes that carries ``alt`` (for code that draws to bytes)."""
    from IPython.display import Image

    return Image(data=png, format="png", metadata={"alt": _need_alt(alt)})
