"""dpkit.plumbing.contract: the records, environment and exit codes parent and child share.

References: the JSON lines below are written out by hand, as the lessons and the parent
modules read them (lesson 07 reads ``ready["placement"]``, lesson 08 ``records[-1]["logdir"]``);
exit codes against argparse's own usage code and 128 + SIGINT.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal

import pytest

from dpkit.plumbing import contract, procs

#: One JSON line per record kind, as a child writes it.
LINES = {
    contract.ThroughputReady: '{"event": "ready", "num_devices": 2, "device_names": ["/CPU:0",'
    ' "/CPU:1"], "device_case": "cpu_split", "physical_devices": 1, "flops_per_example": 1000}',
    contract.ThroughputPeak: '{"event": "peak", "flops_per_sec": 1e10}',
    contract.ThroughputWindow: '{"event": "window", "index": 0, "step": 4, "of_steps": 8, '
    '"examples_per_sec": 512.0, "sec_per_step": 0.5, "loss": 2.3}',
    contract.ThroughputSummary: '{"event": "summary", "examples_per_sec": 500.0, '
    '"mean_examples_per_sec": 505.0, "spread": 0.1, "sec_per_step": 0.5, "windows": 2, '
    '"warmup_steps": 2}',
    contract.ServerReady: '{"ready": "ps:0"}',
    contract.WorkerReady: '{"ready": 1, "workers": 2, "tensorflow": "2.21.0", "pid": 4242}',
    contract.Timed: '{"seconds": 0.25, "loss": 2.1}',
    contract.Checksum: '{"checksum": -3.5}',
    contract.AllReduceTimes: '{"size_bytes": 4096, "seconds": [0.001, 0.002], "per_sample": 64}',
    contract.MatmulPeak: '{"matmul_flops_per_s": 2e10, "matmul_size": 512}',
    contract.Done: '{"done": 0}',
    contract.MirroredStep: '{"step": 3, "loss": 0.4, "seconds": 1.5}',
    contract.Saved: '{"done": 20, "out": "/tmp/w0.npz"}',
    contract.Placed: '{"ready": 0, "placement": {"w": "/job:ps/task:0/device:CPU:0"}}',
    contract.Stepped: '{"stepped": 2}',
    contract.GlobalStep: '{"global_step": 10}',
    contract.TaskProgress: '{"step": 10, "loss": 0.7}',
    contract.TaskDone: '{"done": true, "global_step": 100, "loss": 0.3, "accuracy": 0.9, '
    '"logdir": "runs/cluster"}',
    contract.ContenderReady: '{"ready": "towers", "tensorflow": "2.21.0", "intra_op_threads": '
    '"default", "inter_op_threads": 2, "devices": ["/CPU:0"], "device_case": "cpu_split"}',
    contract.Round: '{"seconds": 0.8}',
    contract.Restored: '{"restored": 4, "worker": 1}',
    contract.Paused: '{"paused": 3}',
    contract.Preempted: '{"preempted": 4, "code": 42}',
}


def _kinds() -> list[type]:
    return [
        v
        for v in vars(contract).values()
        if isinstance(v, type)
        and issubclass(v, contract.Record)
        and v not in (contract.Record, contract.Event)
    ]


def test_every_record_kind_has_a_line_here():
    assert sorted(k.__name__ for k in _kinds()) == sorted(k.__name__ for k in LINES)


@pytest.mark.parametrize("kind", list(LINES), ids=lambda k: k.__name__)
def test_a_record_reads_back_as_its_kind_and_writes_the_same_line(kind, capsys):
    record = procs.parse_record(LINES[kind])
    message = kind.from_record(record)
    assert message.to_record() == json.loads(LINES[kind])
    procs.record(message)
    line = capsys.readouterr().out
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line) == json.loads(LINES[kind])


def test_the_optional_fields_are_left_out_as_the_lessons_read_them():
    assert contract.TaskProgress(step=1, loss=0.5).to_record() == {"step": 1, "loss": 0.5}
    tf1 = contract.TaskProgress(step=1, loss=0.5, mine=1).to_record()
    assert tf1 == {"step": 1, "loss": 0.5, "mine": 1}
    worker = contract.TaskDone(done=True, global_step=7, mine=3).to_record()
    assert worker == {"done": True, "global_step": 7, "mine": 3}
    assert contract.TaskDone.from_record(worker).mine == 3


def test_a_misspelt_field_fails_in_the_child_and_in_the_parent():
    with pytest.raises(TypeError, match="checksumm"):
        contract.Checksum(checksumm=1.0)  # the child's typo: no such field
    with pytest.raises(contract.RecordError) as error:
        contract.Checksum.from_record({"checksumm": 1.0})  # the parent reads a wrong line
    message = str(error.value)
    assert "missing ['checksum']" in message and "unknown ['checksumm']" in message
    assert "['checksum']" in message and "dpkit/plumbing/contract.py" in message


def test_a_missing_field_of_an_event_is_named():
    line = {"event": "window", "index": 0, "step": 4, "of_steps": 8, "loss": 2.3}
    with pytest.raises(contract.RecordError) as error:
        contract.ThroughputWindow.from_record(line)
    assert "'window' event" in str(error.value)
    assert "missing ['examples_per_sec', 'sec_per_step']" in str(error.value)


def test_an_event_read_as_another_event_fails():
    with pytest.raises(contract.RecordError, match="expected the event 'peak', got 'window'"):
        contract.ThroughputPeak.from_record({"event": "window", "flops_per_sec": 1.0})


def test_records_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        contract.Done(done=0).done = 1


def test_the_events_are_found_by_their_event():
    for kind in (contract.ThroughputReady, contract.ThroughputWindow):
        assert contract.EVENTS[json.loads(LINES[kind])["event"]] is kind
    assert len(contract.EVENTS) == 4


def test_procs_record_takes_only_a_record_kind():
    with pytest.raises(TypeError, match="record kind of dpkit.plumbing.contract"):
        procs.record({"checksum": 1.0})


def test_the_exit_codes():
    parser = argparse.ArgumentParser(prog="x")
    with pytest.raises(SystemExit) as usage:
        parser.parse_args(["--no-such-flag"])
    assert usage.value.code == contract.Exit.USAGE
    assert contract.Exit.INTERRUPTED == 128 + signal.SIGINT
    assert (contract.Exit.OK, contract.Exit.FAILED) == (0, 1)
    assert len({int(code) for code in contract.Exit}) == len(contract.Exit)  # no code twice


@pytest.mark.parametrize(
    "returned, expected",
    [
        (contract.ThroughBarrier(), (0, True)),
        (contract.ThroughBarrier(contract.Exit.FAILED), (1, True)),
        (contract.Exit.DIVERGED, (4, False)),
        (0, (0, False)),
        (None, (0, False)),
    ],
)
def test_leaving_tells_the_barrier_from_a_bare_exit_code(returned, expected):
    assert contract.leaving(returned) == expected


def test_quiet_tensorflow_fills_in_and_keeps_what_is_set():
    environ = {"TF_ENABLE_ONEDNN_OPTS": "1", "OTHER": "x"}
    assert contract.quiet_tensorflow(environ) is environ
    assert environ == {"TF_ENABLE_ONEDNN_OPTS": "1", "OTHER": "x", "TF_CPP_MIN_LOG_LEVEL": "3"}


def test_child_env_is_quiet_names_its_parent_and_takes_extra(monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    env = procs.child_env({contract.RUNS: "/tmp/runs", "TF_CPP_MIN_LOG_LEVEL": "1"})
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "1"  # extra wins
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "1"  # this environment's value wins over the default
    assert env[contract.PARENT_PID] == str(os.getpid()) and env[contract.RUNS] == "/tmp/runs"
    assert env["PYTHONUNBUFFERED"] == "1"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(contract.__file__))))
    assert env["PYTHONPATH"].split(os.pathsep)[0] == root
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS")
    assert procs.child_env()["TF_ENABLE_ONEDNN_OPTS"] == "0"


@pytest.mark.parametrize(
    "line, expected",
    [
        ("run 20\n", (contract.Command.RUN, ["20"])),
        ("run\n", (contract.Command.RUN, [])),
        ("checksum\n", (contract.Command.CHECKSUM, [])),
        ("quit\n", (contract.Command.QUIT, [])),
        ("", (contract.Command.QUIT, [])),  # the end of stdin
    ],
)
def test_a_stdin_command_reads_back(line, expected):
    assert contract.Command.parse(line) == expected


def test_a_stdin_command_line_is_its_word_and_arguments():
    assert contract.Command.RUN.line(20) == "run 20"
    assert contract.Command.QUIT.line() == "quit"
    assert contract.Command.parse(contract.Command.RUN.line(7)) == (contract.Command.RUN, ["7"])


def test_an_unknown_stdin_command_is_named():
    with pytest.raises(ValueError, match=r"unknown stdin command 'rnu 3'.*'run', 'checksum'"):
        contract.Command.parse("rnu 3")


def test_the_program_registry_has_the_contracts_program_names():
    from dpkit.programs import PROGRAMS

    assert sorted(PROGRAMS) == sorted(p.value for p in contract.Program)


def test_a_misspelt_program_is_refused_before_a_child_starts():
    with pytest.raises(ValueError, match=r"unknown program 'throughputt'; choose one of .*pinned"):
        procs.program_argv("throughputt", "--config", "{}")
    argv = procs.program_argv(contract.Program.PINNED, "--core", 3)
    assert argv[1:] == ["-m", "dpkit.programs", "pinned", "--core", "3"]
    assert all(type(a) is str for a in argv)


def test_a_program_and_a_command_are_their_words_wherever_a_string_is_made():
    # enum.StrEnum is Python 3.11+; contract's own str enum must behave the same on 3.10.
    for member, word in [(contract.Program.PINNED, "pinned"), (contract.Command.RUN, "run")]:
        assert str(member) == f"{member}" == format(member) == word
        assert f"{member:>8}" == f"{word:>8}"
        assert member + "\n" == word + "\n" and " ".join([member, "x"]) == word + " x"
        assert member == word and json.loads(json.dumps([member])) == [word]
        assert type(member)(word) is member
