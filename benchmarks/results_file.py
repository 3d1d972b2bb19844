"""Where a benchmark writes its result, and how: one JSON file, written atomically (a crash or
Ctrl-C never leaves half a file), its folder made first. Every script in benchmarks/ ends with
:func:`write`."""

from __future__ import annotations

import json
import os
import time


def default_path(name: str) -> str:
    """runs/bench/NAME-YYYYmmdd-HHMMSS.json: a new file per run, beside the earlier ones."""
    return os.path.join("runs", "bench", f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json")


def write(path: str, record: dict) -> str:
    """Write ``record`` to ``path`` as indented JSON through a temporary file; return path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(record, f, indent=1)
    os.replace(path + ".tmp", path)
    return path
