"""``python -m dpkit --help`` run as a child process: exit 0, the usage line under that name,
and each command listed once. The router called in this process: tests/unit/test_cli.py."""

from __future__ import annotations

import re
import subprocess
import sys

from dpkit.plumbing import procs
from tests.support.paths import ROOT

COMMANDS = ("devices", "bench", "task", "doctor")


def _listed(text: str, command: str) -> int:
    """Lines of a help text that list ``command`` (its name first on the line)."""
    return len(re.findall(rf"^\s+{command}(\s|$)", text, flags=re.MULTILINE))


def test_python_m_dpkit_help():
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=procs.child_env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m dpkit ")
    assert [_listed(proc.stdout, command) for command in COMMANDS] == [1] * len(COMMANDS)
