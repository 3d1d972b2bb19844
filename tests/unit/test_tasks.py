"""dpkit.tasks.Group's argument checks, no process: an unknown program and a bad timeout say
what to use; a worker program's share of the global batch from TF_CONFIG. Real task groups:
tests/process/test_tasks.py."""

from __future__ import annotations

import json

import pytest

from dpkit import tasks


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda g: g.start("w", "bogus"), "unknown program 'bogus'; choose one of mwms, tf1"),
        (lambda g: tasks.Group(timeout=0), "timeout must be a positive number"),
    ],
)
def test_bad_arguments_say_what_to_use(call, message):
    with tasks.Group() as group, pytest.raises(ValueError, match=message):
        call(group)


def test_a_worker_program_reads_its_share_of_the_batch_from_tf_config(monkeypatch):
    from dpkit.programs.workers import worker_share

    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="the preempt program needs TF_CONFIG"):
        worker_share("preempt", 64)
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"index": 2}}))
    with pytest.raises(ValueError, match="--global_batch 64"):
        worker_share("mwms", 64)  # 64 examples do not split over 3 workers
    assert worker_share("mwms", 96) == (3, 2, 32)
