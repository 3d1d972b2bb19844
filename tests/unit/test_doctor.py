"""``python -m dpkit doctor``'s pieces in this process, with fakes for its checks and for
devices.setup: exit codes 0, 1 and 130; a mismatch or a raising check FAILED with its numbers
or reason; a failed setup said once; compare() against hand-made arrays; the GPU plans.
The real report, and a planted bug in a child: tests/process/test_doctor.py."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dpkit import devices
from dpkit.cli import doctor
from dpkit.cli import main as cli

CHECK = re.compile(r"^  (ok|FAILED|skipped) +([a-e])\. ([^:]+): (.*)$", re.MULTILINE)


def _checks(text: str) -> dict[str, tuple[str, str]]:
    """``{"a": (status, detail), ...}`` from a report."""
    found = CHECK.findall(text)
    assert len({letter for _, letter, _, _ in found}) == len(found), found  # one line each
    return {letter: (status, detail) for status, letter, _, detail in found}


def test_the_report_shows_the_build():
    build = "\n".join(doctor.build_lines(pytest.importorskip("tensorflow")))
    assert "TensorFlow 2." in build and "Python 3." in build and "is_cuda_build:" in build


# --- checks that fail ------------------------------------------------------------------------


def _fake_checks(monkeypatch, **replace):
    fakes = {
        "check_towers": lambda m: ("ok", "largest gradient gap 0.0e+00"),
        "check_mirrored": lambda m: ("ok", "largest weight gap 0.0e+00"),
        "check_reduction": lambda m: ("ok", "RING"),
        "check_memory": lambda m: ("skipped", "no GPU"),
        "check_throughput": lambda m, echo: ("ok", "1: 10 examples/s (1.00x)"),
    }
    for name, fake in {**fakes, **replace}.items():
        monkeypatch.setattr(doctor, name, fake)
    made = devices.DeviceSetup(  # what devices.setup(2) gives, without starting TensorFlow here
        ("/device:CPU:0", "/device:CPU:1"), "logical_cpus", "CPU", "2 logical CPUs", ("CPU:0",)
    )
    monkeypatch.setattr(doctor.Machine, "setup", lambda self: made)


def test_run_exits_0_when_nothing_failed(monkeypatch):
    _fake_checks(monkeypatch)
    lines = []
    assert doctor.run(echo=lines.append) == 0
    assert "summary: 4 ok, 1 skipped, 0 FAILED" in "\n".join(lines)


def test_a_mismatch_is_failed_with_its_numbers_and_exit_code_1(monkeypatch):
    def mismatch(machine):
        x = np.ones((4, 3), np.float32)
        return doctor.compare("gradient", [x * 2], [x])

    _fake_checks(monkeypatch, check_towers=mismatch)
    lines = []
    assert doctor.run(echo=lines.append) == 1
    checks = _checks("\n".join(lines))
    assert checks["a"][0] == "FAILED" and "largest gradient gap 1.0e+00" in checks["a"][1]
    assert checks["b"][0] == "ok" and "1 FAILED" in lines[-1]


def test_a_check_that_raises_is_failed_with_the_reason_and_the_rest_still_run(monkeypatch):
    def raises(machine):
        raise RuntimeError("TensorFlow is already initialised\nmore text")

    _fake_checks(monkeypatch, check_mirrored=raises)
    lines = []
    assert doctor.run(echo=lines.append) == 1
    checks = _checks("\n".join(lines))
    assert checks["b"] == ("FAILED", "RuntimeError: TensorFlow is already initialised")
    assert checks["e"][0] == "ok"


def test_a_failed_setup_is_said_once_and_fails_the_in_process_checks(monkeypatch):
    def refuses(n, **kwargs):
        raise RuntimeError("TensorFlow is already initialised with 3 CPU device(s)")

    monkeypatch.setattr(devices, "setup", refuses)
    monkeypatch.setattr(doctor, "check_throughput", lambda m, echo: ("ok", "1: 1 examples/s"))
    lines = []
    assert doctor.run(echo=lines.append) == 1
    text = "\n".join(lines)
    assert text.count("already initialised") == 1, text
    checks = _checks(text)
    assert [checks[c][0] for c in "abcde"] == ["FAILED"] * 4 + ["ok"]
    assert re.fullmatch(
        r"RuntimeError: devices.setup\(\d+\) failed \(the reason is above\)", checks["c"][1]
    )


def test_compare_against_hand_made_arrays():
    want = [np.array([1.0, -2.0, 0.5]), np.array([[1000.0]])]
    assert doctor.compare("w", want, want)[0] == "ok"
    close = [want[0] + 5e-3, want[1] * (1 + 5e-5)]  # 1024 epsilons of 1000 is 0.12
    assert doctor.compare("w", close, want)[0] == "ok"
    assert doctor.compare("w", [want[0] + 0.2, want[1]], want)[0] == "FAILED"
    status, detail = doctor.compare("w", [want[0], want[1] * 1.001], want)
    assert status == "FAILED" and "largest w gap 1.0e+00" in detail
    assert doctor.compare("w", [want[0]], want)[0] == "FAILED"  # a missing array
    assert doctor.compare("w", [np.zeros(3)], [np.zeros(3)])[0] == "FAILED"  # nothing compared


def test_the_plans_for_one_and_eight_gpus():
    one = doctor.plan_lines(1)
    assert [line.split(":")[1].strip() for line in one] == ["physical_gpus"] + ["logical_gpus"] * 3
    eight = doctor.plan_lines(8)
    assert all(": physical_gpus: " in line for line in eight)
    assert eight[-1].endswith("physical_index (0, 1, 2, 3, 4, 5, 6, 7)")


# --- the command line --------------------------------------------------------------------------


def test_doctor_help(capsys):
    assert cli.main(["doctor", "--help"], prog="dpkit") == 0
    assert capsys.readouterr().out.startswith("usage: dpkit doctor ")


@pytest.mark.parametrize("outcome, code", [(0, 0), (1, 1), (KeyboardInterrupt, 130)])
def test_the_command_line_exit_codes(monkeypatch, outcome, code):
    def fake(echo=print):
        if outcome is KeyboardInterrupt:
            raise KeyboardInterrupt
        echo("report")
        return outcome

    monkeypatch.setattr(doctor, "run", fake)
    assert cli.main(["doctor"], prog="dpkit") == code
