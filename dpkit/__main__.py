"""Command line: ``python -m dpkit <command>``; ``--help`` on each command."""

from __future__ import annotations

import argparse
import sys


def _devices(args: argparse.Namespace) -> int:
    from dpkit import devices

    result = devices.setup(args.n, gpu_memory_mb=args.gpu_memory_mb)
    print(devices.describe(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpkit", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    dev = commands.add_parser(
        "devices", help="show which devices devices.setup(n) gives on this machine"
    )
    dev.add_argument("-n", type=int, default=2, help="number of devices to set up (default 2)")
    dev.add_argument(
        "--gpu-memory-mb",
        type=int,
        default=1024,
        help="memory per logical GPU when one GPU is split (default 1024)",
    )
    dev.set_defaults(run=_devices)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
