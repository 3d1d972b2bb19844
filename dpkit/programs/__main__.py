"""``python -m dpkit.programs PROGRAM ARGS...``: how every dpkit child process starts."""

from __future__ import annotations

import importlib
import os
import sys

from dpkit import programs
from dpkit.plumbing import procs
from dpkit.programs import PROGRAMS


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in PROGRAMS:
        print(
            f"usage: python -m dpkit.programs {{{','.join(PROGRAMS)}}} ARGS...\n"
            "(started by dpkit itself; see dpkit/programs/__init__.py)",
            file=sys.stderr,
        )
        return 2
    procs.watch_parent()  # exit when whoever started us dies
    module, _, function = PROGRAMS[argv[0]].partition(":")
    return getattr(importlib.import_module(module), function)(argv[1:])


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if programs.leave_through_barrier:  # a collective worker waits for its peers
        sys.exit(code or 0)
    os._exit(code or 0)  # skip TensorFlow's slow and noisy teardown: everything is reported
