"""The unit room's guard (tests/support/no_processes.py) in a pytest session of its own: it
fails a unit test that starts a process, and it is gone for the process tests that follow."""

import subprocess
import sys
import textwrap

from dpkit.plumbing import procs
from tests.support.durations import ROOT

UNIT_CONFTEST = "from tests.support.no_processes import no_processes  # noqa: F401\n"


def _session(tmp_path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "unit", "process"],
        cwd=tmp_path,
        env=procs.child_env({"PYTHONPATH": str(ROOT)}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return run.stdout + run.stderr


def test_the_guard_fails_a_unit_test_that_starts_a_process_and_spares_the_next_room(tmp_path):
    out = _session(
        tmp_path,
        {
            "unit/conftest.py": UNIT_CONFTEST,
            "unit/test_a.py": """
                import subprocess
                def test_pure():
                    assert 1 + 1 == 2
                def test_starts_one():
                    subprocess.run(["true"])
            """,
            "process/test_b.py": """
                import subprocess
                def test_starts_one_too():
                    assert subprocess.run(["true"]).returncode == 0
            """,
        },
    )
    assert "1 failed, 2 passed" in out, out
    assert "FAILED unit/test_a.py::test_starts_one" in out, out
    assert "a unit test starts no process" in out, out
