"""Rooms and stored durations for conftest.py: which room a test is in, and each file's
seconds, written by ``--store-durations`` to tests/durations.json and read to order make test."""

from __future__ import annotations

import json
import resource
from collections import Counter, defaultdict
from pathlib import Path

from tests.support.paths import ROOT

ROOMS = ("unit", "process", "notebooks", "repo", "course")
DURATIONS = ROOT / "tests" / "durations.json"


def room_of(nodeid: str) -> str | None:
    """``tests/unit/test_x.py::t`` -> ``unit``; a notebook under nbval -> ``notebooks``."""
    path = nodeid.split("::")[0]
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == "tests" and parts[1] in ROOMS:
        return parts[1]
    if path.endswith(".ipynb"):
        return "notebooks"
    return None


def stored(path: Path = DURATIONS) -> dict[str, float]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["seconds"]
    except FileNotFoundError:
        return {}


def longest_first(nodeids: list[str], seconds: dict[str, float]) -> list[int]:
    """The order to run tests in: whole files, the longest stored first, then files not on
    record yet (those with the most tests first); within a file, as collected."""
    files = [nodeid.split("::")[0] for nodeid in nodeids]
    count = Counter(files)
    return sorted(
        range(len(nodeids)), key=lambda i: (-seconds.get(files[i], -1.0), -count[files[i]], i)
    )


def cpu_seconds() -> float:
    """CPU seconds (user and system) of this process and of every child it has reaped: a
    test's delta counts the kernels and TensorFlow processes it started and waited for."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class DurationRecorder:
    """Adds up each file's setup, call and teardown seconds; writes them when the run ends."""

    def __init__(self, path: Path = DURATIONS, root: Path = ROOT):
        self.path, self.root = path, root
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report):
        path = report.nodeid.split("::")[0]
        self.seconds[path] += report.duration
        self.cpu[path] += dict(report.user_properties).get("cpu_seconds", 0.0)

    def pytest_sessionfinish(self, session, exitstatus):
        if not self.seconds:
            return
        known = stored(self.path)
        known.update({f: round(s, 1) for f, s in self.seconds.items()})
        known = {f: s for f, s in known.items() if (self.root / f).exists()}  # gone files leave
        cpu = {f: round(s, 1) for f, s in self.cpu.items() if f in known}
        record = {
            "written_by": "make durations (pytest --store-durations); orders make test's files",
            "seconds": dict(sorted(known.items(), key=lambda kv: -kv[1])),
            # CPU seconds of the last run, its kernels and child processes included: where
            # the machine's time goes (two workers on two cores share it).
            "cpu_seconds": dict(sorted(cpu.items(), key=lambda kv: -kv[1])),
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)  # atomic: an interrupted run leaves the old record
