"""Run a snippet in a fresh Python process: TensorFlow's device list is fixed per process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from dpkit.plumbing import procs
from tests.support.paths import ROOT


def run(code: str, timeout: float = 180) -> dict:
    """Run ``code`` in a child interpreter; it must print one JSON object as its last line.

    The child is killed if it outlives ``timeout`` (subprocess.run reaps it).
    """
    env = procs.child_env()
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
