"""figures.show: the PNG it displays carries the alt text; fill colours get hatches of their own."""

import base64

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.core.pylabtools import select_figure_formats  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

from dpkit.views import figures  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def shell():
    """An in-process IPython shell (no kernel) that formats figures as PNG, as the inline
    backend of a kernel does: display() goes to its publisher."""
    shell = InteractiveShell.instance()
    select_figure_formats(shell, {"png"})
    return shell


def test_show_displays_a_png_whose_metadata_carries_the_alt_text(shell):
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [3, 1, 2])
    with capture_output() as out:
        figures.show(fig, alt="  A line plot\n of three points  ")
    assert len(out.outputs) == 1
    shown = out.outputs[0]
    assert base64.b64decode(shown.data["image/png"])[:8] == PNG_MAGIC
    assert shown.metadata == {"image/png": {"alt": "A line plot of three points"}}
    assert not plt.fignum_exists(fig.number), "show closes the figure: plt.show shows it no more"


@pytest.mark.parametrize("alt", ["", "   ", None, 3])
def test_show_refuses_missing_alt_text_and_says_how(alt):
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match=r"alt text that says what the figure shows.*alt="):
        figures.show(fig, alt=alt)
    plt.close(fig)


def test_image_carries_the_alt_text_in_its_png_metadata(shell):
    png = PNG_MAGIC + b"rest"
    with capture_output() as out:
        shell.display_pub.publish(*shell.display_formatter.format(figures.image(png, "bars")))
    assert out.outputs[0].metadata["image/png"]["alt"] == "bars"


def test_stacked_bars_get_one_hatch_per_colour_in_the_legend_too():
    fig, ax = plt.subplots()
    ax.bar([0, 1, 2], [1, 2, 3], label="compute")
    ax.bar([0, 1, 2], [1, 1, 1], bottom=[1, 2, 3], label="exchange")
    ax.legend()
    colours = figures.hatch_by_colour(fig)
    assert len(colours) == 2 and len(set(colours.values())) == 2
    first, second = ax.containers
    # bars of one series share one hatch; the two series differ
    assert len({p.get_hatch() for p in first}) == 1 and len({p.get_hatch() for p in second}) == 1
    assert first[0].get_hatch() != second[0].get_hatch()
    handles = ax.get_legend().legend_handles
    assert [h.get_hatch() for h in handles] == [first[0].get_hatch(), second[0].get_hatch()]
    plt.close(fig)


def test_a_diagrams_boxes_keep_their_plain_fills():
    fig, ax = plt.subplots()
    ax.add_patch(plt.Rectangle((0, 0), 1, 1, color="red"))
    ax.add_patch(plt.Rectangle((2, 0), 1, 1, color="blue"))
    assert figures.hatch_by_colour(fig) == {}
    assert all(not p.get_hatch() for p in ax.patches)
    plt.close(fig)


def test_bars_coloured_one_by_one_share_a_hatch_per_colour():
    """Lesson 06's timeline: barh calls coloured by device, a legend of bare Rectangles."""
    fig, ax = plt.subplots()
    for i, colour in enumerate(["C0", "C1", "C0", "grey"]):
        ax.barh(i % 2, 1, left=i, color=colour)
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in ("C0", "C1")], labels="ab")
    colours = figures.hatch_by_colour(fig)
    assert len(colours) == 3
    hatches = [p.get_hatch() for p in ax.patches]
    assert hatches[0] == hatches[2] and len({hatches[0], hatches[1], hatches[3]}) == 3
    handles = ax.get_legend().legend_handles
    assert [h.get_hatch() for h in handles] == hatches[:2]
    assert _drawn_in_two_colours(fig, handles[1]), "the legend's hatch must show on its fill"
    plt.close(fig)


def _drawn_in_two_colours(fig, patch) -> bool:
    """Whether the patch, as drawn, shows more than its fill colour (its hatch lines)."""
    import numpy as np

    fig.canvas.draw()
    box = patch.get_window_extent(fig.canvas.get_renderer())
    pixels = np.asarray(fig.canvas.buffer_rgba())[::-1]  # rows from the bottom, as box is
    inside = pixels[int(box.y0) + 2 : int(box.y1) - 1, int(box.x0) + 2 : int(box.x1) - 1, :3]
    return len({tuple(p) for p in inside.reshape(-1, 3)}) > 2


def test_one_fill_colour_is_left_as_it_is():
    fig, ax = plt.subplots()
    ax.bar([0, 1], [1, 2], color="#219ebc")
    ax.plot([0, 1], [1, 2], color="red")  # lines are not patches
    assert figures.hatch_by_colour(fig) == {}
    assert all(p.get_hatch() is None for p in ax.patches)
    plt.close(fig)


def test_lines_that_differ_only_in_colour_get_styles_of_their_own_in_the_legend_too():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="correct")
    ax.plot([0, 1], [1, 0], label="averaged twice")
    ax.plot([0, 1], [0.5, 0.5], "--", color="grey", label="ideal")  # already its own style
    ax.plot([0, 1], [0.2, 0.3], "o-", label="measured")  # a marker tells it apart
    ax.plot([0, 1], [0.9, 0.9], lw=3, label="average")  # so does its width
    ax.legend()
    assert figures.style_by_line(fig) == 1
    styles = [line.get_linestyle() for line in ax.get_lines()]
    assert styles[0] == "-" and styles[1] not in ("-", "--") and styles[2:] == ["--", "-", "-"]
    shown = {
        t.get_text(): h.get_linestyle()
        for t, h in zip(ax.get_legend().texts, ax.get_legend().legend_handles)
    }
    assert shown["averaged twice"] == styles[1] and shown["correct"] == "-"
    plt.close(fig)


def test_outline_steps_of_two_histograms_are_told_apart():
    fig, ax = plt.subplots()
    ax.stairs([1, 2, 1], [0, 1, 2, 3], label="step 0")
    ax.stairs([2, 1, 2], [0, 1, 2, 3], label="step 100")
    assert figures.style_by_line(fig) == 1
    first, second = ax.patches
    assert first.get_linestyle() in ("-", "solid") and second.get_linestyle() not in ("-", "solid")
    plt.close(fig)
