"""What this process may really use: its cores and memory, cgroup quotas included.

On a laptop the answer is the machine. In a container (a JupyterHub pod, Binder, a CI runner)
it is less: ``os.sched_getaffinity`` still lists every core of the host, while the cgroup's CPU
quota (``cpu.max`` in cgroup v2, ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` in v1) lets the
processes of the container run for, say, 1.5 cores' worth of time, and its memory limit
(``memory.max``, ``memory.limit_in_bytes``) kills a kernel that goes over it. Pinned workers
each need a whole core of CPU time, so the cores counted here are the affinity cores cut to the
whole cores the quota allows.

Where the cgroup does not show the limit (a hub that limits memory some other way, a nested
container), ``DPKIT_MEMORY_LIMIT`` states it (``2G``, ``1500M`` or bytes); it can only lower
what the cgroup and the machine allow, and it is also how to try a lesson as it would run in a
small pod. :func:`fits` holds a plan of TensorFlow processes against that memory, with sizes
measured here (:data:`TF_SHARED_BYTES`).

Every reader takes the filesystem root, so the tests give them a fake ``/sys`` and ``/proc``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from dpkit.plumbing import contract

#: A cgroup v1 memory limit at or above this is the kernel's way of saying "no limit".
NO_LIMIT_BYTES = 1 << 60

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}

# What TensorFlow processes take, measured here with tools/memory_peak.py (TensorFlow 2.21,
# Linux x86-64, lessons 05, 07 and 09 at their defaults; a process's "own" pages are its USS).
#: Pages of Python's and TensorFlow's libraries that every process maps: a process's RSS
#: less its own pages, 334 MiB for a child that only ran one op, 341-347 MiB in lessons 05
#: and 07. A container's limit charges them once.
TF_SHARED_BYTES = 350 * 2**20
#: A lesson's kernel, its own pages while its TensorFlow children run: 436-457 MiB in lesson
#: 05 beside its pinned workers, 570-581 MiB in lesson 07 beside its worker processes
#: (several runs). Lesson 07's kernel grows to about 880 MiB later, beside small server tasks.
KERNEL_BYTES = 590 * 2**20
#: A child process training a small model, its own pages: 418-479 MiB for lesson 05's pinned
#: LeNet-5 processes, 469-525 MiB for lesson 09's, 315 MiB for lesson 07's worker program
#: (259 MiB for a child that only imported TensorFlow and ran one op).
TF_CHILD_BYTES = 530 * 2**20


def need(children: int) -> int:
    """Bytes a lesson's kernel and ``children`` TensorFlow child processes take at most,
    from the sizes measured here (:data:`TF_SHARED_BYTES` once, :data:`KERNEL_BYTES`,
    :data:`TF_CHILD_BYTES` per child)."""
    return TF_SHARED_BYTES + KERNEL_BYTES + children * TF_CHILD_BYTES


def fits(children: int, memory: int | None) -> bool:
    """Whether a lesson's kernel and ``children`` TensorFlow child processes at once fit in
    ``memory`` bytes (``None``: unknown, taken to fit)."""
    return memory is None or need(children) <= memory


@dataclass(frozen=True)
class Quota:
    """What this process may use; ``None`` where nothing limits it below the machine."""

    affinity_cores: int  # cores the scheduler lets this process run on
    cpu_quota: float | None  # cores' worth of CPU time per period the cgroup allows
    memory_limit: int | None  # bytes the cgroup allows, None without a limit
    physical_memory: int | None  # bytes the machine has (None where unknown)
    memory_stated: int | None = None  # bytes DPKIT_MEMORY_LIMIT states, None where unset

    @property
    def cores(self) -> int:
        """Whole cores this process can keep busy at once (at least 1)."""
        if self.cpu_quota is None:
            return self.affinity_cores
        return max(1, min(self.affinity_cores, math.floor(self.cpu_quota + 1e-9)))

    @property
    def memory(self) -> int | None:
        """Bytes this process can use: the least of the cgroup limit, the machine and
        ``DPKIT_MEMORY_LIMIT``."""
        limits = (self.memory_limit, self.physical_memory, self.memory_stated)
        known = [b for b in limits if b is not None]
        return min(known) if known else None

    def describe(self) -> str:
        """One line for a lesson or the doctor: what limits this process, and by how much."""
        cpu = f"{self.cores} core(s)"
        if self.cpu_quota is not None and self.cores < self.affinity_cores:
            cpu += f" (a CPU quota of {self.cpu_quota:g} of the {self.affinity_cores} visible)"
        return f"{cpu}, {self.describe_memory()}"

    def describe_memory(self) -> str:
        """The memory half of :meth:`describe`: how much, and what sets it."""
        if self.memory is None:
            return "memory unknown"
        mem = f"{self.memory / 2**30:.1f} GiB of memory"
        if self.memory_stated is not None and self.memory == self.memory_stated:
            return mem + f" ({contract.MEMORY_LIMIT})"
        if self.memory_limit is not None and self.memory == self.memory_limit:
            return mem + " (a container limit)"
        return mem


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _cgroup_paths(root: Path) -> dict[str, str]:
    """{controller: path} from /proc/self/cgroup ("" is cgroup v2's unified hierarchy)."""
    paths = {}
    for line in (_read(root / "proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2]
    return paths


def _candidates(root: Path, mount: str, own: str | None) -> list[Path]:
    """Where a controller's files may be: this process's own cgroup, then the mount's root."""
    base = root / "sys/fs/cgroup" / mount if mount else root / "sys/fs/cgroup"
    found = [base / own.lstrip("/")] if own and own != "/" else []
    return [*found, base]


def cpu_quota(root: Path = Path("/")) -> float | None:
    """Cores' worth of CPU time the cgroup allows, or ``None`` with no quota."""
    own = _cgroup_paths(root)
    for folder in _candidates(root, "", own.get("")):
        text = _read(folder / "cpu.max")
        if text:
            limit, _, period = text.partition(" ")
            if limit == "max":
                return None
            return int(limit) / int(period or 100000)
    for mount in ("cpu", "cpu,cpuacct"):
        for folder in _candidates(root, mount, own.get("cpu")):
            limit, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
            if limit and period:
                return None if int(limit) < 0 else int(limit) / int(period)
    return None


def memory_limit(root: Path = Path("/")) -> int | None:
    """Bytes the cgroup allows this process, or ``None`` with no limit."""
    own = _cgroup_paths(root)
    for folder in _candidates(root, "", own.get("")):
        text = _read(folder / "memory.max")
        if text:
            return None if text == "max" else int(text)
    for folder in _candidates(root, "memory", own.get("memory")):
        text = _read(folder / "memory.limit_in_bytes")
        if text:
            return None if int(text) >= NO_LIMIT_BYTES else int(text)
    return None


def physical_memory(root: Path = Path("/")) -> int | None:
    """Bytes of memory the machine has (``MemTotal`` of /proc/meminfo), None where unknown."""
    for line in (_read(root / "proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def memory_stated(environ=None) -> int | None:
    """Bytes ``DPKIT_MEMORY_LIMIT`` states (``2G``, ``1500M``, ``512K`` or bytes; binary
    units), or ``None`` where it is unset or empty.

    Raises:
        ValueError: the value is not a positive size; the message names the variable.
    """
    name = contract.MEMORY_LIMIT
    text = (os.environ if environ is None else environ).get(name, "").strip()
    if not text:
        return None
    number, unit = text.upper().removesuffix("B"), ""
    if number[-1:] in _UNITS:
        number, unit = number[:-1], number[-1]
    try:
        size = float(number) * _UNITS[unit]
    except ValueError:
        size = -1.0
    if not size > 0 or not math.isfinite(size):
        raise ValueError(
            f"{name}={text!r} is not a memory size: give bytes or a number with K, M or "
            f"G (binary units), e.g. {name}=2G, or unset it"
        )
    return int(size)


def affinity_cores() -> int:
    """Cores the scheduler lets this process run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def read(root: Path = Path("/"), environ=None) -> Quota:
    """This process's :class:`Quota` (``environ``: the environment, ``os.environ`` if None)."""
    return Quota(
        affinity_cores(),
        cpu_quota(root),
        memory_limit(root),
        physical_memory(root),
        memory_stated(environ),
    )
