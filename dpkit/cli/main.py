"""The command line: ``dpkit COMMAND`` (or ``python -m dpkit COMMAND``); ``--help`` on each.

Run the workbook's library from a terminal. Every command checks its flags and values
before it starts anything (a bad one is a usage error). Exit codes: 0 done, 1 a run failed,
2 a usage error, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from dpkit.plumbing.contract import Exit, end_process, leaving  # the exit codes, written once


def program_name() -> str:
    """``dpkit`` when run as the console script, else ``python -m dpkit``."""
    name = os.path.splitext(os.path.basename(sys.argv[0] if sys.argv else ""))[0]
    return "dpkit" if name == "dpkit" else "python -m dpkit"


def _parser(prog: str) -> argparse.ArgumentParser:
    import dpkit
    from dpkit import devices, models, report

    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").partition("\n\n")[2])
    parser.add_argument("--version", action="version", version=f"%(prog)s {dpkit.__version__}")
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    p = commands.add_parser(
        "devices",
        help="show which devices devices.setup(n) gives on this machine",
        description="Set up n devices the way every lesson does, and print what they are.",
    )
    p.add_argument(
        "-n", type=int, default=2, metavar="N", help="devices to set up (default %(default)s)"
    )
    split = "memory per logical GPU when one GPU is split (default %(default)s)"
    p.add_argument(
        "--gpu-memory-mb", type=int, default=devices.DEFAULT_GPU_MEMORY_MB, metavar="MB", help=split
    )
    p.set_defaults(prepare=_devices)

    p = commands.add_parser(
        "bench",
        help="measure throughput on one or several device counts (one child process each)",
        description=(
            "Train for a few steps on each device count, each in a fresh process, and print "
            "examples/sec, speed-up, scaling efficiency and model FLOPs utilisation as they "
            "arrive. Writes the results as JSON and a PNG plot. Example:\n"
            f"  {prog} bench --devices 1 2 4 --model lenet5 --batch 256"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    counts = p.add_mutually_exclusive_group()
    counts.add_argument(
        "--devices", type=int, nargs="+", default=[1, 2, 4], metavar="N", help="default 1 2 4"
    )
    counts.add_argument("--up-to", type=int, metavar="N", help="sweep 1, 2, 4, ... up to N devices")
    default = vars(report.Config())  # the library's defaults

    def option(flag: str, what: str = "", **kwargs):  # a Config field's default is shown
        name = flag[2:].replace("-", "_")
        if name in default:
            kwargs["default"], what = default[name], f"{what} (default %(default)s)".strip()
        p.add_argument(flag, help=what, **kwargs)

    option("--model", choices=list(models.MODELS))
    option("--strategy", choices=report.STRATEGIES)
    option("--batch", "global batch, per device with --weak", type=int, metavar="N")
    option("--weak", "weak scaling: --batch is per device, not global", action="store_true")
    option("--dataset", choices=report.DATASETS)
    option("--warmup-steps", "steps not measured", type=int, metavar="N")
    option("--window-steps", "steps per window", type=int, metavar="N")
    option("--windows", "measurement windows", type=int, metavar="N")
    option("--timeout", "per device count, before it is killed", type=float, metavar="SECONDS")
    option("--no-peak", "skip the matmul peak (no MFU)", action="store_true")
    option("--out", "results file (default runs/bench/bench-<time>.json)", metavar="JSON")
    option("--plot", "plot file (default: the JSON path with .png)", metavar="PNG")
    p.set_defaults(prepare=_bench)

    p = commands.add_parser(
        "doctor",
        help="check this machine before a class and print one report for a bug report",
        description=(
            "Print the TensorFlow build, the GPUs, what devices.setup(n) does here for 1, 2, "
            "4 and 8 devices, and checks, each ok, FAILED or skipped: the tower step against "
            "one big batch and against MirroredStrategy, the all-reduce it picked, GPU memory, "
            "and a short throughput run on 1, 2 and all devices. Exits 1 if a check FAILED."
        ),
    )
    p.set_defaults(prepare=_doctor)

    commands.add_parser(  # never parsed here: main() hands its arguments to the task program
        "task",
        help=f"run one task of a cluster, from flags or TF_CONFIG ({prog} task --help)",
        add_help=False,
    )
    return parser


def flag_spelling(name: str, value=None) -> str:
    """How the command line writes a setting: ``--warmup-steps``, or ``--batch 256``."""
    flag = "--" + name.replace("_", "-")
    return flag if value is None else f"{flag} {value}"


def _devices(args: argparse.Namespace):
    from dpkit import devices

    devices.count(args.n, "-n", "e.g. -n 2")  # the rules setup() applies, worded as flags
    devices.memory_mb(args.gpu_memory_mb, "--gpu-memory-mb")
    devices.plan(args.n, 0, gpu_memory_mb=args.gpu_memory_mb)

    def work() -> int:
        print(devices.describe(devices.setup(args.n, gpu_memory_mb=args.gpu_memory_mb)))
        return Exit.OK

    return work


def _bench(args: argparse.Namespace):
    from dpkit import bench, devices, report
    from dpkit.summaries.writers import runs_root

    if args.up_to is not None:
        devices.count(args.up_to, "--up-to", "e.g. --up-to 4")
        counts = bench.powers_of_two(args.up_to)
    else:
        counts = [devices.count(n, "--devices", "e.g. --devices 1 2 4") for n in args.devices]
    fields = ("model", "strategy", "batch", "dataset", "warmup_steps", "window_steps", "windows")
    config = {name: getattr(args, name) for name in (*fields, "timeout")}
    scaling = "weak" if args.weak else "strong"
    with report.spelled(flag_spelling):  # a Config's errors name the flags
        sweep = bench.Sweep(counts, scaling=scaling, measure_peak=not args.no_peak, **config)
    for flag, path in (("--out", args.out), ("--plot", args.plot)):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder and not os.path.isdir(folder):  # checked before any child starts
            raise ValueError(
                f"{flag} {path}: the folder {folder} does not exist; create it first "
                f"(mkdir -p {folder}) or give a path in a folder that does."
            )

    def work() -> int:
        first = sweep.configs[0]
        batch = f"{args.batch} {'per device' if args.weak else 'global'}"
        steps = f"{first.warmup_steps} warm-up steps, then {first.windows} windows"
        what = f"{args.model}, {args.strategy}, {scaling} scaling, batch {batch}, devices {counts}"
        print(f"{what}; {steps} of {first.window_steps} steps", flush=True)
        default = runs_root() / "bench" / time.strftime("bench-%Y%m%d-%H%M%S.json")
        stem = args.out or str(default)
        interrupted = False
        try:
            sweep.run(lambda event: print(bench.describe_event(event), flush=True))
        except KeyboardInterrupt:
            interrupted = True  # the running child is already killed by the runner
            print("\ninterrupted: the running child was killed; saving what finished.", flush=True)
        sweep_report = sweep.report
        print("\n" + sweep_report.table())
        if sweep_report.results:
            if not args.out:  # only the default folder is made (--out's must exist: checked)
                default.parent.mkdir(parents=True, exist_ok=True)
            sweep_report.save(stem)
            png = args.plot or os.path.splitext(stem)[0] + ".png"
            sweep_report.plot().savefig(png, dpi=110)
            print(f"\nresults: {stem}\nplot:    {png}")
        for r in sweep_report.results:
            if not r.ok:
                print(f"\n{r.config.devices} device(s) {r.status}:\n{r.error}", file=sys.stderr)
        if interrupted:
            return Exit.INTERRUPTED
        return Exit.OK if all(r.ok for r in sweep_report.results) else Exit.FAILED

    return work


def _doctor(args: argparse.Namespace):
    from dpkit.cli import doctor

    def work() -> int:
        return doctor.run(echo=lambda line: print(line, flush=True))

    return work


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run one command (``argv``: the arguments after the program name, by default
    ``sys.argv[1:]``); return its exit code. ``prog`` names the program in messages."""
    own_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    prog = prog or program_name()
    if argv[:1] == ["task"]:  # its own parser: TF1-style --flags, TF_CONFIG, its exit codes
        from dpkit import launcher  # the flags read, --help or an error, before TensorFlow loads

        task = launcher.read(argv[1:], prog=f"{prog} task")
        if isinstance(task, int):  # --help, or a bad flag (printed)
            return int(task)
        from dpkit.programs import task as program

        returned = program.run(task)
        if own_process:  # as every dpkit program ends
            end_process(returned)
        return leaving(returned)[0]
    try:
        args = _parser(prog).parse_args(argv)
    except SystemExit as stop:  # --help (0) or a usage error (2), already printed
        return stop.code if isinstance(stop.code, int) else Exit.USAGE
    where = f"{prog} {args.command}"
    try:
        try:
            work = args.prepare(args)
        except ValueError as err:
            print(f"{where}: error: {err}", file=sys.stderr)
            return Exit.USAGE
        return work()
    except (RuntimeError, ValueError) as err:  # the work started: a failure, not a usage error
        print(f"{where}: error: {err}", file=sys.stderr)
        return Exit.FAILED
    except KeyboardInterrupt:
        print(f"\n{where}: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
