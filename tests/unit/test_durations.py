"""make test's file order comes from durations a tool stored (tests/support/durations.py)."""

import json
from types import SimpleNamespace

from tests.support import durations


def test_the_room_is_the_folder_and_a_notebook_is_in_notebooks():
    assert durations.room_of("tests/unit/test_x.py::test_a[1]") == "unit"
    assert durations.room_of("tests/process/test_x.py::test_a") == "process"
    assert durations.room_of("lessons/02_towers.ipynb::Cell 3") == "notebooks"
    assert durations.room_of("tests/support/x.py::y") is None
    assert durations.room_of("conftest.py::x") is None


def test_files_run_longest_first_then_unknown_ones_by_their_number_of_tests():
    ids = ["a.py::1", "b.py::1", "b.py::2", "c.py::1", "d.py::1", "d.py::2", "d.py::3", "a.py::2"]
    seconds = {"a.py": 5.0, "c.py": 90.0}
    order = [ids[i] for i in durations.longest_first(ids, seconds)]
    assert order == [
        "c.py::1",
        "a.py::1",
        "a.py::2",
        "d.py::1",
        "d.py::2",
        "d.py::3",
        "b.py::1",
        "b.py::2",
    ]


def test_the_recorder_adds_up_each_file_and_drops_files_that_are_gone(tmp_path):
    (tmp_path / "tests").mkdir()
    for name in ("kept.py", "run.py"):
        (tmp_path / "tests" / name).write_text("")
    path = tmp_path / "tests" / "durations.json"
    old = {"tests/kept.py": 7.0, "tests/run.py": 1.0, "tests/gone.py": 50.0}
    path.write_text(json.dumps({"seconds": old}))
    recorder = durations.DurationRecorder(path, tmp_path)
    for nodeid, seconds, cpu in [
        ("tests/run.py::a", 0.25, []),  # setup, call and teardown of one test: three reports
        ("tests/run.py::a", 2.0, []),
        ("tests/run.py::a", 0.25, [("cpu_seconds", 3.5)]),  # the teardown carries the CPU
        ("tests/run.py::b", 10.0, [("cpu_seconds", 1.0)]),
    ]:
        report = SimpleNamespace(nodeid=nodeid, duration=seconds, user_properties=cpu)
        recorder.pytest_runtest_logreport(report)
    recorder.pytest_sessionfinish(None, 0)
    record = json.loads(path.read_text())
    assert record["seconds"] == {"tests/run.py": 12.5, "tests/kept.py": 7.0}
    assert record["cpu_seconds"] == {"tests/run.py": 4.5}
    assert list(record["seconds"]) == ["tests/run.py", "tests/kept.py"]  # longest first
    assert not path.with_suffix(".tmp").exists()


def test_a_run_that_recorded_nothing_leaves_the_record_alone(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text('{"seconds": {"x.py": 1.0}}')
    durations.DurationRecorder(path, tmp_path).pytest_sessionfinish(None, 0)
    assert path.read_text() == '{"seconds": {"x.py": 1.0}}'


def test_the_rooms_are_the_folders_of_tests():
    """A new room folder gets its marker only once ROOMS names it (and make unit its door)."""
    folders = {
        d.name
        for d in (durations.ROOT / "tests").iterdir()
        if d.is_dir() and d.name not in ("support", "wrong_answers", "__pycache__")
    }
    assert folders == set(durations.ROOMS)
