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

import pytest

from tests.support.durations import (
    DURATIONS,
    ROOMS,
    DurationRecorder,
    cpu_seconds,
    longest_first,
    room_of,
    stored,
)

# nbval's stderr hook; the known_run fixture the summaries tests of two rooms share.
pytest_plugins = ["tests.support.nbval_plugin", "tests.support.summaries_run"]


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="write each file's seconds to tests/durations.json (orders make test)",
    )


def pytest_configure(config):
    for room in ROOMS:
        config.addinivalue_line("markers", f"{room}: a test in tests/{room}/ (set by folder)")
    if config.getoption("--store-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(DURATIONS), "dpkit-durations")


def pytest_collection_modifyitems(config, items):
    for item in items:
        room = room_of(item.nodeid)
        if room:
            item.add_marker(getattr(pytest.mark, room))
    # (xdist's workers collect with dist "no"; the flag is what they see of make test's mode.)
    if getattr(config.option, "loadscopereorder", True):
        return
    order = longest_first([item.nodeid for item in items], stored())
    items[:] = [items[i] for i in order]


CPU_AT_SETUP = pytest.StashKey[float]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.stash[CPU_AT_SETUP] = cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test's CPU seconds, its reaped children's included, ride on its teardown report."""
    outcome = yield
    if call.when == "teardown" and CPU_AT_SETUP in item.stash:
        spent = cpu_seconds() - item.stash[CPU_AT_SETUP]
        outcome.get_result().user_properties.append(("cpu_seconds", spent))
