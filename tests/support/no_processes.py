"""A guard for tests/unit: a test that starts a process fails, naming the room it belongs in
(tests/process, or tests/notebooks for a kernel). It stops every ``subprocess.Popen``, however
imported (``_execute_child`` is what each one calls), from before the first fixture runs."""

from __future__ import annotations

import platform
import subprocess

import pytest

ROOM = (
    "a unit test starts no process (this one started {argv!r}): move it to tests/process, or "
    "tests/notebooks if it starts a kernel"
)


def _refuse(self, args, *rest, **kwargs):
    raise AssertionError(ROOM.format(argv=args if isinstance(args, str) else list(args)[:3]))


@pytest.fixture(autouse=True, scope="module")
def no_processes():
    """Module scope: set up before any module fixture of a unit test file, and torn down when
    the file ends, so the process tests a worker runs next start their processes."""
    # The standard library's own probe: platform.processor() runs `uname -p` once and caches
    # it (the doctor's report reads it). It is not the test's process: run it before the guard.
    platform.processor()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "_execute_child", _refuse)
        yield
