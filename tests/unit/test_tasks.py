"""dpkit.tasks.Group's argument checks, no process: an unknown program and a bad timeout say
what to use. Real task groups: tests/process/test_tasks.py."""

from __future__ import annotations

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
