"""One wrong answer: what it replaces, the check that must catch it, and how."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    """One wrong answer.

    Attributes:
        answer: which marked answer of the notebook it replaces, counted from 1.
        why: the mistake in a few words (the test's id).
        code: the replacement, written at indentation 0 (re-indented to the marker's).
        check: the check that must catch it: "2" for the cell whose docstring says "Check 2".
        expect: a regular expression the check's assertion message must match.
    """

    answer: int
    why: str
    code: str
    check: str
    expect: str

    def swapped_into(self, source: str) -> str:
        """`source` (a solution cell) with its marked region replaced by this answer."""
        lines, out, inside = source.split("\n"), [], False
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("### BEGIN SOLUTION"):
                indent = line[: len(line) - len(line.lstrip())]
                code = textwrap.dedent(self.code).strip("\n")
                out += [indent + row if row else row for row in code.split("\n")]
                inside = True
            elif stripped.startswith("### END SOLUTION"):
                inside = False
            elif not inside:
                out.append(line)
        return "\n".join(out)
