"""Every figure a lesson stores has alt text, the one its cell declares (tools/cell_tags.py)."""

import sys

import nbformat
import pytest

from tests.support.notebooks import LESSONS, ROOT, nbio

sys.path.insert(0, str(ROOT / "tools"))
import cell_tags  # noqa: E402


def ids(paths):
    return [p.name for p in paths]


@pytest.mark.parametrize("path", LESSONS, ids=ids(LESSONS))
def test_every_stored_image_has_the_alt_text_its_cell_declares(path):
    nb = nbio.read(path)
    relpath = f"lessons/{path.name}"
    for index, cell in enumerate(nb.cells):
        images = cell_tags.images(cell) if cell.cell_type == "code" else []
        if not images:
            continue
        declared = cell_tags.declared_alts(cell.source)
        stored = [o.get("metadata", {}).get("image/png", {}).get("alt", "") for o in images]
        assert stored == declared, f"{relpath} cell {index}: run python tools/cell_tags.py"
        assert all(len(alt.split()) >= 8 for alt in stored), (
            f"{relpath} cell {index}: alt text says what the figure shows, in a sentence"
        )
    assert cell_tags.problems(nb, relpath) == []


@pytest.mark.parametrize("path", LESSONS, ids=ids(LESSONS))
def test_figures_are_shown_with_alt_text_not_plt_show(path):
    for index, cell in enumerate(nbio.read(path).cells):
        if cell.cell_type == "code":
            assert "plt.show()" not in cell.source, (
                f"cell {index}: end a figure with figures.show(fig, alt=...), not plt.show()"
            )


def _notebook():
    drawn = nbformat.v4.new_code_cell(
        '# NBVAL_CHECK_OUTPUT\nfigures.show(fig, alt="A line plot of the loss by step")\nprint(1)'
    )
    drawn.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": "iVBO", "text/plain": "F"}),
        nbformat.v4.new_output("stream", name="stdout", text="1\n"),
    ]
    return nbformat.v4.new_notebook(cells=[drawn])


def test_migration_moves_the_marker_and_stores_the_alt_without_touching_outputs():
    nb = _notebook()
    problems = cell_tags.problems(nb, "x.ipynb")
    assert any("NBVAL_CHECK_OUTPUT" in p for p in problems)
    assert any("no alt text" in p for p in problems)
    outputs_before = [dict(o.get("data", {}), text=o.get("text")) for o in nb.cells[0].outputs]
    assert cell_tags.migrate(nb, "x.ipynb") == (True, [])
    cell = nb.cells[0]
    assert cell.source == 'figures.show(fig, alt="A line plot of the loss by step")\nprint(1)'
    assert cell.metadata["tags"] == ["nbval-check-output"]
    assert cell.outputs[0].metadata == {"image/png": {"alt": "A line plot of the loss by step"}}
    assert [dict(o.get("data", {}), text=o.get("text")) for o in cell.outputs] == outputs_before
    assert cell_tags.problems(nb, "x.ipynb") == []
    assert cell_tags.migrate(nb, "x.ipynb") == (False, [])  # idempotent


def test_a_figure_without_declared_alt_text_is_reported():
    nb = _notebook()
    nb.cells[0].source = "plt.show()"
    changed, problems = cell_tags.migrate(nb, "x.ipynb")
    assert not changed and "declares 0 alt text(s)" in problems[0]
    nb.cells[0].source = 'figures.show(fig, alt=f"{n} steps")'
    with pytest.raises(ValueError, match="not a plain string"):
        cell_tags.declared_alts(nb.cells[0].source)
