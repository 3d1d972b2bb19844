"""Execute notebooks from a clean kernel: `make notebooks` (in place) or `make timings`.

    python tools/run_notebooks.py --in-place lessons/*.ipynb solutions/*.ipynb
    python tools/run_notebooks.py --timings lessons/*.ipynb

Each notebook runs top to bottom in a fresh kernel with its folder as the working
directory, as a learner's "Restart and run all" would. With --in-place the outputs
are stored (normal form, see nbio.py). With --timings nothing is written; a table of
seconds per notebook is printed against the budget. A failing cell stops that
notebook, is reported, and the run exits non-zero; the file on disk is untouched.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbio  # noqa: E402

BUDGET_SECONDS = 60


def execute(path: Path, timeout: int = 600, allow_errors: bool = False) -> tuple[object, float]:
    """Run one notebook; return (executed notebook, seconds).

    With ``allow_errors`` a failing cell stores its error and execution goes on
    (the exercise tests use this to see which check cells fail on the stubs).
    """
    from dpkit.plumbing import contract

    contract.quiet_tensorflow(os.environ)  # the kernels inherit it
    os.environ.setdefault(contract.WIDGETS, "text")  # stored outputs: text, readable anywhere
    nb = nbio.read(path)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    return nb, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--in-place", action="store_true", help="store the new outputs")
    mode.add_argument("--timings", action="store_true", help="only time each notebook")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)

    rows, failed = [], []
    for path in args.notebooks:
        print(f"running {path} ...", flush=True)
        try:
            nb, seconds = execute(path, args.timeout)
        except CellExecutionError as err:
            print(f"FAILED {path}:\n{str(err)[-2000:]}", file=sys.stderr)
            failed.append(path)
            continue
        rows.append((str(path), seconds))
        print(f"  {seconds:6.1f} s", flush=True)
        if args.in_place:
            nbio.write(nb, path)
    if args.timings and rows:
        width = max(len(p) for p, _ in rows)
        print(f"\n{'notebook'.ljust(width)}  seconds  within {BUDGET_SECONDS} s")
        for p, s in rows:
            print(f"{p.ljust(width)}  {s:7.1f}  {'yes' if s <= BUDGET_SECONDS else 'NO'}")
    slow = [p for p, s in rows if s > BUDGET_SECONDS]
    if args.timings and slow:
        print(
            f"\nOVER BUDGET: {len(slow)} notebook(s) took more than {BUDGET_SECONDS} s: "
            f"{', '.join(slow)}. Shrink their parameters cell or their runs.",
            file=sys.stderr,
        )
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 1 if args.timings and slow else 0


if __name__ == "__main__":
    sys.exit(main())
