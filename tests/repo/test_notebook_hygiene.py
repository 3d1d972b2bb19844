"""What every notebook must be: structure, parameters, checked claims, stored outputs."""

import ast
import re
import statistics

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tests.support.notebooks import EXERCISES, LESSONS, SOLUTIONS, nbio

ALL = LESSONS + SOLUTIONS + EXERCISES


def ids(paths):
    return [f"{p.parent.name}/{p.name}" for p in paths]


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_the_workbook_has_its_first_lessons():
    assert [p.name[:2] for p in LESSONS][:2] == ["00", "01"]


@pytest.mark.parametrize("path", LESSONS, ids=ids(LESSONS))
def test_lesson_states_at_least_five_checked_claims(path):
    nb = nbio.read(path)
    checked = [c for c in code_cells(nb) if nbio.has_tag(c, "nbval-check-output")]
    assert len(checked) >= 5, f"{len(checked)} checked cells: a lesson states at least 5 claims"
    for cell in checked:  # a claim nbval compares must have an output to compare
        assert any(o.output_type in ("stream", "execute_result") for o in cell.outputs), cell.source


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_the_check_tag_is_the_one_marker_of_a_checked_cell(path):
    """nbval reads the tag nbval-check-output; a comment line would show on the website
    (tools/cell_tags.py moves one into the tag)."""
    for index, cell in enumerate(code_cells(nbio.read(path))):
        comments = [line for line in cell.source.split("\n") if "NBVAL_" in line]
        assert not comments, (
            f"cell {index} carries {comments[0].strip()!r}: tag the cell instead "
            "(python tools/cell_tags.py)"
        )


@pytest.mark.parametrize("path", LESSONS, ids=ids(LESSONS))
def test_lesson_code_cells_are_short(path):
    """Like the TensorFlow docs tutorials: a median of at most 8 lines, define then use."""
    lengths = sorted(len(c.source.strip().splitlines()) for c in code_cells(nbio.read(path)))
    median = statistics.median(lengths)
    assert median <= 8, f"median code cell {median} lines: split build from run from show"


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_one_parameters_cell(path):
    nb = nbio.read(path)
    tagged = [c for c in nb.cells if nbio.has_tag(c, "parameters")]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters' (papermill convention)"
    tree = ast.parse(tagged[0].source)
    # Annotated, so that `papermill --help-notebook` shows each parameter's type.
    assert all(isinstance(node, ast.AnnAssign) for node in tree.body), "NAME: type = value only"


def parameter_names(cell) -> list[str]:
    return [node.target.id for node in ast.parse(cell.source).body]


@pytest.mark.parametrize("path", LESSONS + SOLUTIONS, ids=ids(LESSONS + SOLUTIONS))
def test_every_parameter_is_checked_in_the_next_cell(path):
    """papermill injects its values right after the tagged cell; the cell after that checks
    every parameter with dpkit.params, so a value the notebook cannot use stops it at once."""
    cells = nbio.read(path).cells
    index = next(i for i, c in enumerate(cells) if nbio.has_tag(c, "parameters"))
    check = cells[index + 1]
    calls = [
        node
        for node in ast.walk(ast.parse(check.source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "params.check"
    ]
    assert len(calls) == 1, "the cell after the parameters calls params.check(globals(), ...) once"
    assert ast.unparse(calls[0].args[0]) == "globals()"
    checked = [k.arg for k in calls[0].keywords]
    assert sorted(checked) == sorted(parameter_names(cells[index])), "check every parameter once"


@pytest.mark.parametrize("path", LESSONS + SOLUTIONS, ids=ids(LESSONS + SOLUTIONS))
def test_structure_title_setup_summary(path):
    nb = nbio.read(path)
    assert nb.cells[0].cell_type == "markdown" and re.match(r"# \S", nb.cells[0].source)
    assert "Learning objectives" in nb.cells[0].source
    headings = [
        line
        for c in nb.cells
        if c.cell_type == "markdown"
        for line in c.source.splitlines()
        if line.startswith("## ")
    ]
    assert headings[0] == "## Setup" and "## Summary" in headings
    if path in LESSONS:
        assert headings[-1] == "## Exercises"


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_imports_only_in_the_first_code_cell(path):
    # The Colab install cell (tools/colab.py) comes first and imports nothing.
    cells = [c for c in code_cells(nbio.read(path)) if not c.get("id", "").endswith("-colab")]
    for cell in cells[1:]:
        # IPython's transformer turns magics (%%writefile) into Python that ast can read.
        tree = ast.parse(TransformerManager().transform_cell(cell.source))
        imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        if nbio.has_tag(cell, "check"):
            # A check cell names the check it calls, which a curious learner can read.
            imports = [n for n in imports if not _imports_a_check(n)]
        assert not imports, f"import outside the Setup cell:\n{cell.source[:200]}"


def _imports_a_check(node) -> bool:
    """``from dpkit_checks import ex03``: what a check cell may import."""
    return isinstance(node, ast.ImportFrom) and node.module == "dpkit_checks"


@pytest.mark.parametrize("path", LESSONS + SOLUTIONS, ids=ids(LESSONS + SOLUTIONS))
def test_committed_executed_top_to_bottom_without_errors(path):
    cells = code_cells(nbio.read(path))
    counts = [c.execution_count for c in cells]
    assert counts == list(range(1, len(cells) + 1)), "run `make notebooks` (clean kernel, in order)"
    for cell in cells:
        assert not [o for o in cell.outputs if o.output_type == "error"]


@pytest.mark.parametrize("path", EXERCISES, ids=ids(EXERCISES))
def test_exercises_are_committed_without_outputs(path):
    for cell in code_cells(nbio.read(path)):
        assert not cell.outputs and cell.execution_count is None


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_no_absolute_paths_and_normal_form(path):
    text = path.read_text(encoding="utf-8")
    sources = "".join(c.source for c in nbio.read(path).cells)
    assert not re.search(r"(/home/|/root/|/Users/|/work/|C:\\\\)", sources)
    assert text == nbio.dumps(nbio.read(path)), "not in normal form: write it with tools/nbio.py"


# A warning, a log line or a traceback in a stored output distracts a learner reading the
# lesson, unless the lesson is about it: then the cell carries the tag "shows-warning".
NOISE = re.compile(
    r"^\s*(WARNING|INFO|ERROR|DEBUG)\b[:\s]"  # Python and absl logging
    r"|^[IWEF]\d{4} \d\d:\d\d:\d\d"  # TensorFlow's C++ log lines
    r"|Traceback \(most recent call last\)"
    r"|\b\w*Warning: ",  # warnings.warn's "file:line: UserWarning: ..."
    re.MULTILINE,
)


def output_text(output) -> str:
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "Traceback (most recent call last)\n" + "\n".join(output.traceback)
    return output.get("data", {}).get("text/plain", "")


@pytest.mark.parametrize("path", LESSONS + SOLUTIONS, ids=ids(LESSONS + SOLUTIONS))
def test_no_stored_warning_log_line_or_traceback(path):
    for cell in code_cells(nbio.read(path)):
        if nbio.has_tag(cell, "shows-warning"):
            continue
        for output in cell.outputs:
            found = NOISE.search(output_text(output))
            assert not found, (
                f"cell {cell.get('id')} stores {found.group(0)!r}: silence it at its source, or "
                "tag the cell 'shows-warning' if the lesson is about it"
            )


def test_the_noise_pattern_finds_what_it_should():
    for noisy in [
        "INFO:tensorflow:Using MirroredStrategy with devices (...)",
        "WARNING:tensorflow:AutoGraph could not transform <function>",
        "/tmp/ipykernel_1/2.py:1: UserWarning: dpkit.cluster: no authentication",
        "W0000 00:00:1700000000.1 12 gpu.cc:1] not found",
        "Traceback (most recent call last)",
    ]:
        assert NOISE.search(noisy), noisy
    for quiet in ["weights equal within 1e-5: True", "warm-up: 3 steps", "INFOrmation"]:
        assert not NOISE.search(quiet), quiet
