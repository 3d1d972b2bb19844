"""No number a reader cannot trace, and no stored timing from a busy machine.

A ratio, percentage, rate or duration in a lesson's prose (its markdown cells) is either
printed by the run (a code cell renders the sentence from the computed values, so it
cannot drift from them) or a published figure whose source is named on the same line: a
link, or one of the sources the workbook cites by name. A few numbers are definitions or
arithmetic, not measurements (100% efficiency means ...); they are listed below, each
with the reason.

Every cell that times something prints the load other programs put on the machine while
it measured (``dpkit.meter.OtherLoad``), and a stored timing must have been recorded on a
quiet machine.
"""

from __future__ import annotations

import re

import pytest

from tests.support.notebooks import LESSONS, nbio

# A measurement-like figure: a ratio (1.4x, 15×, but not 5x5 or 784 × 100), a percentage,
# or a number with a unit of time or rate.
FIGURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:"
    r"[x×](?!\s?\d)(?!\w)"
    r"|%"
    r"|(?:ms|µs|ns|s|seconds?|minutes?|GFLOP/s|TFLOP/s|MB/s|GB/s|Gbit/s|examples/s(?:ec)?|images/s)\b"
    r")"
)

# A line that names its source: a link, or a source the workbook cites by name (SOURCES.md
# and dpkit.published list them).
SOURCE = re.compile(
    r"\]\(|the book chapter|the three-GPU tutorial|Keith's notes|the tf\.data post"
    r"|the PaddleFluid comparison|TensorFlow's (?:published )?benchmarks|tf_cnn_benchmarks"
    r"|Horovod|Sergeev|Goyal|SOURCES\.md|dpkit\.published"
)

# Numbers in prose that are definitions, arithmetic or the lesson's own parameters, not
# measurements: (lesson prefix, the words around the number) -> why it needs no source.
NOT_MEASURED = {
    ("05", "100% means"): "the definition of scaling efficiency",
    ("05", "within ±5% of it"): "the replay's own construction (the code cell sets it)",
}

STRIP = [
    re.compile(r"```.*?```", re.S),  # code blocks
    re.compile(r"`[^`]*`"),  # inline code
    re.compile(r"\$\$.*?\$\$", re.S),  # display maths
    re.compile(r"\$[^$]*\$"),  # inline maths
    re.compile(r"\]\([^)]*\)"),  # link targets (the link itself still counts as a source)
]


def prose_lines(path):
    for index, cell in enumerate(nbio.read(path).cells):
        if cell.cell_type != "markdown":
            continue
        text = cell.source
        for pattern in STRIP[:-1]:
            text = pattern.sub(" ", text)
        for line in text.splitlines():
            yield index, line


def untraced(path) -> list[str]:
    lesson = path.name[:2]
    allowed = [words for (prefix, words) in NOT_MEASURED if prefix == lesson]
    found = []
    for index, line in prose_lines(path):
        if SOURCE.search(line):
            continue
        bare = STRIP[-1].sub(" ", line)
        for words in allowed:
            bare = bare.replace(words, " ")
        for match in FIGURE.finditer(bare):
            start = max(0, match.start() - 50)
            found.append(
                f"cell {index}: '{match.group(0)}' in '...{bare[start : match.end() + 30]}...'"
            )
    return found


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_figure_in_the_prose_is_printed_by_the_run_or_cited(path):
    found = untraced(path)
    assert not found, (
        "figures in the prose with no source on their line: print them from the run "
        "(IPython.display.Markdown from the computed values) or name the source:\n  "
        + "\n  ".join(found)
    )


def test_the_figure_pattern_finds_measurements_and_not_shapes():
    assert [m.group(0) for m in FIGURE.finditer("reached 1.69x and 98% at 1,018 examples/s")] == [
        "1.69x",
        "98%",
        "1,018 examples/s",
    ]
    assert not FIGURE.search("two 5x5 convolutions on a 784×100 matrix, a 3136 × 512 layer")
    assert not FIGURE.search("section 9.3 of TensorFlow 2.21")


def test_a_cited_line_passes_and_an_uncited_one_fails(tmp_path):
    nb = nbio.read(LESSONS[0])
    nb.cells = [
        nbio.nbformat.v4.new_markdown_cell(
            "Horovod reached 90% on 512 GPUs.\nThe towers ran 1.4x faster here."
        )
    ]
    path = tmp_path / "00_x.ipynb"
    nbio.write(nb, path)
    found = untraced(path)
    assert len(found) == 1 and "'1.4x'" in found[0]


# --- Stored timings come from a quiet machine -------------------------------------------

# A code cell that times work: the meter, a sweep, the pinned workers, the calibration,
# or a bare perf_counter.
TIMES = re.compile(
    r"perf_counter\(|ThroughputMeter\((?![^)]*clock=)|pinned\.compare\(|calibrate\.measure\("
    r"|bench\.(?:run|sweep|Sweep)\(|widgets\.(?:live_)?sweep"
)
LOAD = re.compile(r"other work on this machine while measuring: ([\d.]+) cores")


def outputs_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif "data" in output:
            parts.append(output.data.get("text/plain", "") + output.data.get("text/markdown", ""))
    return "".join(parts)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_stored_timing_was_recorded_on_a_quiet_machine(path):
    from dpkit import meter

    problems = []
    for index, cell in enumerate(nbio.read(path).cells):
        if cell.cell_type != "code":
            continue
        text = outputs_text(cell)
        loads = [float(x) for x in LOAD.findall(text)]
        if TIMES.search(cell.source) and not loads:
            problems.append(f"cell {index} times work but prints no meter.OtherLoad line")
        busy = [x for x in loads if x >= meter.QUIET_CORES]
        if busy:
            problems.append(
                f"cell {index} was recorded while other work used {max(busy):.2f} cores "
                f"(quiet is under {meter.QUIET_CORES}): re-execute the lesson on a quiet machine"
            )
    assert not problems, "\n".join(problems)
