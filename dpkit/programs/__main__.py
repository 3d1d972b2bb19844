"""``python -m dpkit.programs PROGRAM ARGS...``: how every dpkit child process starts."""

from __future__ import annotations

import importlib
import sys

from dpkit.plumbing import contract, procs
from dpkit.programs import PROGRAMS


def main(argv: list[str] | None = None) -> int | contract.ThroughBarrier:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in PROGRAMS:
        print(
            f"usage: python -m dpkit.programs {{{','.join(PROGRAMS)}}} ARGS...\n"
            "(started by dpkit itself; see dpkit/programs/__init__.py)",
            file=sys.stderr,
        )
        return contract.Exit.USAGE
    procs.watch_parent()  # exit when whoever started us dies
    module, _, function = PROGRAMS[argv[0]].partition(":")
    return getattr(importlib.import_module(module), function)(argv[1:])


if __name__ == "__main__":
    contract.end_process(main())
