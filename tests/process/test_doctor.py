"""``python -m dpkit doctor`` run as a child on this machine: exit 0, checks a-e ok or skipped,
the towers' and mirrored gaps under the bar its report states, the CPU plans and throughput;
a child with a planted bug (gradients summed, not averaged) gets a and b FAILED and exit
code 1. The pieces, with fakes: tests/unit/test_doctor.py."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dpkit.cli import doctor
from dpkit.plumbing import procs
from tests.support import childproc

CHECK = re.compile(r"^  (ok|FAILED|skipped) +([a-e])\. ([^:]+): (.*)$", re.MULTILINE)
GAP = re.compile(r"largest \w+ gap ([0-9.e+-]+)")
BAR = re.compile(r"the bar is ([0-9.e+-]+)")


def _checks(text: str) -> dict[str, tuple[str, str]]:
    """``{"a": (status, detail), ...}`` from a report."""
    found = CHECK.findall(text)
    assert len({letter for _, letter, _, _ in found}) == len(found), found  # one line each
    return {letter: (status, detail) for status, letter, _, detail in found}


def _section(text: str, head: str) -> str:
    """The indented lines under a heading line that starts with ``head``."""
    block = text.split("\n" + head, 1)[1].split("\n\n", 1)[0]
    return block.split("\n", 1)[1] if "\n" in block else ""


@pytest.fixture(scope="module")
def report():
    proc = subprocess.run(  # subprocess.run reaps the child, also on the timeout
        [sys.executable, "-m", "dpkit", "doctor"],
        capture_output=True,
        text=True,
        cwd=childproc.ROOT,
        env=procs.child_env(),
        timeout=180,
    )
    return proc


@pytest.fixture(scope="module")
def no_gpu(report):
    if "no GPU" not in _section(report.stdout, "GPUs"):
        pytest.skip("this machine has a GPU: the CPU-only expectations do not apply")


def test_the_doctor_exits_0_with_every_check_ok_or_skipped(report):
    assert report.returncode == 0, report.stdout + report.stderr[-3000:]
    checks = _checks(report.stdout)
    assert sorted(checks) == list("abcde"), report.stdout
    assert {status for status, _ in checks.values()} <= {"ok", "skipped"}, checks
    assert "FAILED" not in report.stdout.replace("0 FAILED", "")
    assert re.search(r"^summary: \d ok, \d skipped, 0 FAILED", report.stdout, re.MULTILINE)


def test_the_towers_and_mirrored_gaps_are_within_the_tolerance(report):
    checks = _checks(report.stdout)
    for letter in "ab":
        status, detail = checks[letter]
        assert status == "ok", detail
        gap, bar = float(GAP.search(detail).group(1)), float(BAR.search(detail).group(1))
        assert gap <= bar, detail
    moved = float(re.search(r"moved them up to ([0-9.e+-]+)", checks["b"][1]).group(1))
    assert moved > 100 * doctor.MIN_MOVE  # the step changed the weights: the gap means something


def test_the_gpu_checks_are_skipped_with_a_reason_on_a_cpu(report, no_gpu):
    checks = _checks(report.stdout)
    assert checks["d"] == ("skipped", "no GPU")
    assert checks["c"][0] == "ok"
    assert "NCCL needs >= 2 physical GPUs" in checks["c"][1]
    skipped = _section(report.stdout, "f. GPU checks skipped")
    assert "d. memory in use per GPU after a step: no GPU" in skipped
    assert "NCCL all-reduce between physical GPUs" in skipped
    assert "compute capability" in skipped


def test_the_plan_lists_1_2_4_and_8_devices(report, no_gpu):
    plans = _section(report.stdout, "plans:").splitlines()
    counts = [
        int(re.match(r"\s+(\d+) device\(s\): logical_cpus: ", line).group(1)) for line in plans
    ]
    assert counts == [1, 2, 4, 8], plans


def test_the_throughput_runs_1_and_2_devices_and_says_why_no_speed_up(report, no_gpu):
    status, detail = _checks(report.stdout)["e"]
    assert status == "ok", detail
    rates = dict(re.findall(r"(\d+): ([0-9,]+) examples/s", detail))
    assert sorted(rates) == ["1", "2"] and all(int(r.replace(",", "")) > 0 for r in rates.values())
    assert "logical devices add no compute" in detail


# --- checks that fail ------------------------------------------------------------------------


def test_a_planted_bug_makes_the_tower_checks_fail_and_the_exit_code_1():
    code = """
    import json
    from dpkit import gradients
    from dpkit.cli import doctor

    average = gradients.average_gradients
    def summed(tower_grads, weights=None):  # the off-by-N: the towers' sum, not their mean
        n = len(tower_grads)
        return [None if g is None else g * n for g in average(tower_grads, weights)]
    gradients.average_gradients = summed
    doctor.check_throughput = lambda machine, echo: ("skipped", "not needed here")
    lines = []
    print(json.dumps({"code": doctor.run(echo=lines.append), "report": "\\n".join(lines)}))
    """
    out = childproc.run(code, timeout=180)
    checks = _checks(out["report"])
    assert out["code"] == 1, out["report"]
    assert checks["a"][0] == "FAILED" and checks["b"][0] == "FAILED", checks
    gap = float(GAP.search(checks["a"][1]).group(1))
    assert gap > 100 * float(BAR.search(checks["a"][1]).group(1)), checks["a"]
    assert checks["c"][0] == "ok"  # the other checks still ran
    assert "2 FAILED" in out["report"]


# --- the command line --------------------------------------------------------------------------
