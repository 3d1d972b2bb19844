"""`make lab` serves JupyterLab on 127.0.0.1 only, behind a token (the Makefile's own command)."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.support import machine
from tests.support.paths import ROOT


def _lab_command(port: int) -> str:
    """The command `make lab` would run, without running make's install step."""
    out = subprocess.run(
        ["make", "-n", "-s", "lab", f"PORT={port}", f"PY={sys.executable}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    ).stdout
    joined = out.replace("\\\n", " ")
    lines = [line for line in joined.splitlines() if "jupyter lab" in line and "echo" not in line]
    assert len(lines) == 1, out
    return lines[0].strip()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_make_lab_listens_on_loopback_with_a_token(tmp_path):
    port = machine.free_port()
    command = _lab_command(port)
    assert "--ip=127.0.0.1" in command
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "BROWSER": "true"}
    with open(tmp_path / "lab.log", "w+") as log:
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 90
            token = None
            while time.monotonic() < deadline and token is None:
                assert proc.poll() is None, (tmp_path / "lab.log").read_text()[-2000:]
                match = re.search(r"token=([0-9a-f]{16,})", (tmp_path / "lab.log").read_text())
                token = match and match.group(1)
                time.sleep(0.5)
            assert token, "JupyterLab printed no token within 90 s"
            while _status(f"{base}/api/status?token={token}") != 200:
                assert time.monotonic() < deadline, "JupyterLab did not answer within 90 s"
                time.sleep(0.5)
            assert _status(f"{base}/api/contents") == 403  # no token, no access
            others = machine.addresses_besides_loopback_one()
            assert others, "no address besides 127.0.0.1 to prove JupyterLab does not listen on"
            for address in others:  # listening on 127.0.0.1 only: every other one refuses
                with pytest.raises(OSError):
                    socket.create_connection((address, port), timeout=3).close()
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
                stopped = True
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                stopped = False
        assert stopped, "JupyterLab did not stop within 30 s of SIGTERM"
        assert machine.wait_gone(proc.pid, 10, group=True), "a process of JupyterLab outlived it"
