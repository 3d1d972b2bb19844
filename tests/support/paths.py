"""Where the repository is: the one definition every test and helper module imports; and
which make targets its CI script runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ci_targets() -> list[str]:
    """The make targets .ci/run runs, in order (its one TARGETS=(...) line)."""
    found = re.search(r"^TARGETS=\(([^)]*)\)", (ROOT / ".ci" / "run").read_text(), re.M)
    assert found, ".ci/run names the targets it runs in one TARGETS=(...) line"
    return found.group(1).split()
