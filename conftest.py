"""pytest configuration shared by the tests (tests/<room>/) and nbval over lessons/ and solutions/.

* Markers by folder: a test in ``tests/unit/`` is marked ``unit``, and so on for ``process``,
  ``notebooks`` and ``repo``; a notebook under nbval is marked ``notebooks``. ``-m "not
  notebooks"`` picks rooms without naming files. (tests/unit/conftest.py also fails a unit
  test that starts a process.)
* Stored durations: ``--store-durations`` (``make durations``) writes the seconds each file
  took, setup and teardown included, to ``tests/durations.json``. With
  ``--no-loadscope-reorder`` (``make test``'s two xdist workers take whole files in collection
  order) the files are ordered longest first from that record, so that a long file does not
  start last and keep one worker busy while the other waits. Files it does not know yet
  follow, those with the most tests first.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.nbval_plugin"]

ROOT = Path(__file__).resolve().parent
ROOMS = ("unit", "process", "notebooks", "repo")
DURATIONS = ROOT / "tests" / "durations.json"


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help=f"write each file's seconds to {DURATIONS.relative_to(ROOT)} (orders make test)",
    )


def pytest_configure(config):
    for room in ROOMS:
        config.addinivalue_line("markers", f"{room}: a test in tests/{room}/ (set by folder)")
    if config.getoption("--store-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(DURATIONS), "dpkit-durations")


def room_of(nodeid: str) -> str | None:
    """``tests/unit/test_x.py::t`` -> ``unit``; a notebook under nbval -> ``notebooks``."""
    path = nodeid.split("::")[0]
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == "tests" and parts[1] in ROOMS:
        return parts[1]
    if path.endswith(".ipynb"):
        return "notebooks"
    return None


def stored_durations(path: Path = DURATIONS) -> dict[str, float]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["seconds"]
    except FileNotFoundError:
        return {}


def pytest_collection_modifyitems(config, items):
    for item in items:
        room = room_of(item.nodeid)
        if room:
            item.add_marker(getattr(pytest.mark, room))
    # (xdist's workers collect with dist "no"; the flag is what they see of make test's mode.)
    if getattr(config.option, "loadscopereorder", True):
        return
    seconds = stored_durations()
    files = [item.nodeid.split("::")[0] for item in items]
    count = Counter(files)
    order = sorted(
        range(len(items)), key=lambda i: (-seconds.get(files[i], -1.0), -count[files[i]], i)
    )
    items[:] = [items[i] for i in order]


class DurationRecorder:
    """Adds up each file's setup, call and teardown seconds; writes them when the run ends."""

    def __init__(self, path: Path):
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report):
        self.seconds[report.nodeid.split("::")[0]] += report.duration

    def pytest_sessionfinish(self, session, exitstatus):
        if not self.seconds:
            return
        known = stored_durations(self.path)
        known.update({f: round(s, 1) for f, s in self.seconds.items()})
        known = {f: s for f, s in known.items() if (ROOT / f).exists()}  # gone files leave
        record = {
            "written_by": "make durations (pytest --store-durations); orders make test's files",
            "seconds": dict(sorted(known.items(), key=lambda kv: -kv[1])),
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)  # atomic: an interrupted run leaves the old record
