"""The command line (``dpkit`` / ``python -m dpkit``) called in this process: help under each
name, defaults read from the library (report.Config, devices), usage errors (exit 2) that name
the flag, exit codes 1 and 130, --version, and ``task`` handing every argument to the task
program. ``python -m dpkit --help`` as a child: tests/process/test_cli.py."""

from __future__ import annotations

import re
import sys
import types

import pytest

from dpkit import devices
from dpkit.cli import main as cli
from dpkit.report import Config
from tests.support.paths import ROOT

COMMANDS = ("devices", "bench", "task", "doctor")


def _listed(text: str, command: str) -> int:
    """Lines of a help text that list ``command`` (its name first on the line)."""
    return len(re.findall(rf"^\s+{command}(\s|$)", text, flags=re.MULTILINE))


@pytest.mark.parametrize("prog", ["python -m dpkit", "dpkit"])
def test_help_lists_each_command_once_under_the_right_name(capsys, prog):
    assert cli.main(["--help"], prog=prog) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {prog} ")
    assert {command: _listed(out, command) for command in COMMANDS} == dict.fromkeys(COMMANDS, 1)
    assert "{" not in out  # the usage line says COMMAND, not the list again
    assert f"{prog} task --help" in " ".join(out.split())


@pytest.mark.parametrize("command", ["devices", "bench"])
def test_each_command_has_help_under_the_right_name(capsys, command):
    assert cli.main([command, "--help"], prog="dpkit") == 0
    assert capsys.readouterr().out.startswith(f"usage: dpkit {command} ")


def test_the_name_comes_from_how_it_was_started(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/home/me/.venv/bin/dpkit", "--help"])
    assert cli.program_name() == "dpkit"
    monkeypatch.setattr(sys, "argv", [str(ROOT / "dpkit" / "__main__.py"), "--help"])
    assert cli.program_name() == "python -m dpkit"


def test_bench_defaults_come_from_the_library(capsys):

    cli.main(["bench", "--help"], prog="dpkit")
    out = " ".join(capsys.readouterr().out.split())
    config = Config()
    assert f"(default {config.warmup_steps})" in out and f"default {config.batch}" in out
    assert f"default {config.model}" in out and f"default {config.strategy}" in out


def test_devices_default_memory_comes_from_the_library(capsys):
    cli.main(["devices", "--help"], prog="dpkit")
    assert f"(default {devices.DEFAULT_GPU_MEMORY_MB})" in " ".join(capsys.readouterr().out.split())


def test_a_bad_device_count_is_a_usage_error(capsys):
    assert cli.main(["devices", "-n", "0"], prog="dpkit") == 2
    err = capsys.readouterr().err
    assert err.startswith("dpkit devices: error: ") and "at least 1" in err


def test_an_unknown_command_is_a_usage_error(capsys):
    assert cli.main(["train"], prog="dpkit") == 2
    assert "invalid choice: 'train'" in capsys.readouterr().err


def test_a_bad_flag_is_a_usage_error(capsys):
    assert cli.main(["devices", "--gpu_memory_mb", "512"], prog="dpkit") == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_a_failed_run_exits_1_and_ctrl_c_130(monkeypatch, capsys):
    def fails(n, **kwargs):
        raise RuntimeError("TensorFlow is already initialised")

    monkeypatch.setattr(devices, "setup", fails)
    assert cli.main(["devices", "-n", "2"], prog="dpkit") == 1
    assert "dpkit devices: error: TensorFlow is already initialised" in capsys.readouterr().err

    def interrupted(n, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(devices, "setup", interrupted)
    assert cli.main(["devices", "-n", "2"], prog="dpkit") == 130


def test_task_reads_its_flags_then_hands_the_task_to_the_task_program(monkeypatch, capsys):
    import dpkit.programs

    calls = []
    fake = types.ModuleType("dpkit.programs.task")
    fake.run = lambda task: calls.append(task) or 7
    monkeypatch.setitem(sys.modules, "dpkit.programs.task", fake)
    monkeypatch.setattr(dpkit.programs, "task", fake, raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    argv = ["--job_name=worker", "--task_index=1", "--worker_hosts=a:2222,b:2222"]
    assert cli.main(["task", *argv], prog="dpkit") == 7
    assert [(t.job, t.index, t.cluster) for t in calls] == [
        ("worker", 1, {"worker": ["a:2222", "b:2222"]})
    ]
    # --help and a bad flag end before the program: its help, or the error and exit code 2
    assert cli.main(["task", *argv, "--help"], prog="dpkit") == 0
    assert "usage: dpkit task" in capsys.readouterr().out
    assert cli.main(["task", "--job_name=worker", "--task_index=3", "--worker_hosts=a:1"]) == 2
    assert "task index 3 is out of range" in capsys.readouterr().err
    assert len(calls) == 1


def test_version_prints_the_package_version(capsys):
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    from tests.support.paths import ROOT

    with open(ROOT / "pyproject.toml", "rb") as f:
        written = tomllib.load(f)["project"]["version"]  # what make release sets
    assert cli.main(["--version"], prog="dpkit") == 0
    assert capsys.readouterr().out.strip() == f"dpkit {written}"


@pytest.mark.parametrize("flag", ["--out", "--plot"])
def test_an_output_in_a_missing_folder_is_a_usage_error_and_nothing_is_made(tmp_path, capsys, flag):
    missing = tmp_path / "not" / "there"
    code = cli.main(["bench", "--devices", "1", flag, str(missing / "x.json")], prog="dpkit")
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"dpkit bench: error: {flag} " in err and f"the folder {missing} does not exist" in err
    assert list(tmp_path.iterdir()) == []  # no folder made, no child started


@pytest.mark.parametrize(
    "argv, says",
    [
        (["devices", "-n", "99"], "-n must be a whole number from 1 to 64, got 99"),
        (["devices", "--gpu-memory-mb", "0"], "--gpu-memory-mb must be a whole number >= 1"),
        (["bench", "--devices", "1", "0"], "--devices must be a whole number from 1 to 64, got 0"),
        (["bench", "--up-to", "100"], "--up-to must be a whole number from 1 to 64, got 100"),
        (["bench", "--batch", "0"], "--batch must be a whole number >= 1, got 0; e.g. --batch 256"),
        (["bench", "--warmup-steps", "-1"], "--warmup-steps must be a whole number >= 0"),
        (["bench", "--windows", "0"], "--windows must be a whole number >= 1"),
        (["bench", "--timeout", "-1"], "--timeout must be a positive number of seconds"),
    ],
)
def test_a_bad_value_is_named_by_its_flag_not_the_python_argument(capsys, argv, says):
    assert cli.main(argv, prog="dpkit") == 2
    err = capsys.readouterr().err
    assert says in err, err
    assert not re.search(r"\b(setup\(n\)|gpu_memory_mb|warmup_steps|up_to)\b|\w=\d", err), err


def test_python_callers_still_read_python_names():
    with pytest.raises(ValueError, match=r"warmup_steps must be .*; e\.g\. warmup_steps=5"):
        Config(warmup_steps=-1)
    with pytest.raises(ValueError, match=r"^gpu_memory_mb must be"):
        devices.plan(2, 0, gpu_memory_mb=0)
