"""Process and network facts the tests check: is a PID gone, what is this machine's address."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from dpkit.plumbing import procs


def free_port() -> int:
    """A free port, from dpkit's one port picker (portpicker, as TensorFlow's tests use)."""
    return procs.free_port()


def non_loopback_address() -> str | None:
    """This machine's own address on its network interface (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # only picks a route
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def addresses_besides_loopback_one() -> list[str]:
    """Addresses of this machine other than 127.0.0.1, where a server bound to 127.0.0.1 only
    must refuse connections, and one bound to every interface would accept them.

    Its network address, when it has one, and on Linux 127.0.0.2 (Linux routes all of
    127.0.0.0/8 to the loopback interface, so the check holds on a machine with no network).
    """
    found = [a for a in [non_loopback_address()] if a]
    if sys.platform.startswith("linux"):
        found.append("127.0.0.2")
    return found


def gone(pid: int) -> bool:
    """The process no longer exists (or is a zombie that nobody has reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/status") as status:
            return any(line.split()[1:2] == ["Z"] for line in status if line.startswith("State"))
    except OSError:
        return True


def _pgid(pid: str):
    try:
        return os.getpgid(int(pid))
    except OSError:
        return None


def group_gone(pgid: int) -> bool:
    """No live process is left in the process group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return all(gone(int(p)) for p in os.listdir("/proc") if p.isdigit() and _pgid(p) == pgid)


def wait_gone(pid: int, timeout: float, *, group: bool = False) -> bool:
    """Poll until the process (and its group) is gone; return whether it went."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(pid) and (not group or group_gone(pid)):
            return True
        time.sleep(0.1)
    return gone(pid) and (not group or group_gone(pid))


def stop_group(proc: subprocess.Popen, timeout: float = 15) -> None:
    """End a child started in its own session: SIGTERM to its group, SIGKILL if it lingers."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
