"""Drive a Jupyter kernel the way JupyterLab does, for widget tests.

JupyterLab talks to widgets with comm messages: the kernel opens one comm per widget
model (``comm_open``, target ``jupyter.widget``) and sends state changes
(``comm_msg`` with ``method: update``); the browser sends the user's changes the same
way and a button press as ``method: custom, content: {event: click}``. This module
plays the browser's part over jupyter_client, with no browser.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from pathlib import Path

from dpkit.plumbing import contract, procs

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Model:
    """A widget model as the frontend knows it: its comm id and latest state."""

    comm_id: str
    state: dict
    updates: list = field(default_factory=list)  # every state change, in order

    @property
    def name(self) -> str:
        return self.state.get("_model_name", "")


class Frontend:
    """A kernel plus the widget models it has opened, updated from iopub."""

    def __init__(self, env: dict | None = None):
        from jupyter_client.manager import start_new_kernel

        kernel_env = procs.child_env(env)
        if contract.WIDGETS not in (env or {}):  # a frontend is attached: real widgets
            kernel_env.pop(contract.WIDGETS, None)
        self.km, self.kc = start_new_kernel(
            kernel_name="python3", env=kernel_env, cwd=str(ROOT), startup_timeout=60
        )
        self.models: dict[str, Model] = {}
        self.outputs: list[dict] = []  # display_data / stream / error contents

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def kernel_pid(self) -> int:
        return self.km.provisioner.process.pid

    # -- messages from the kernel

    def _handle(self, msg: dict) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
            state = dict(content["data"]["state"])
            self._apply_buffers(state, content["data"].get("buffer_paths", []), msg)
            self.models[content["comm_id"]] = Model(content["comm_id"], state)
        elif kind == "comm_msg":
            model = self.models.get(content["comm_id"])
            data = content["data"]
            if model is not None and data.get("method") in ("update", "echo_update"):
                state = dict(data["state"])
                self._apply_buffers(state, data.get("buffer_paths", []), msg)
                model.state.update(state)
                model.updates.append(state)
        elif kind in ("display_data", "stream", "error", "execute_result"):
            self.outputs.append({"type": kind, **content})

    @staticmethod
    def _apply_buffers(state: dict, paths: list, msg: dict) -> None:
        for path, buf in zip(paths, msg.get("buffers", [])):
            state[path[0]] = bytes(buf)

    def pump(self, seconds: float = 0.2) -> None:
        """Handle the iopub messages that arrive within ``seconds``."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            try:
                self._handle(self.kc.get_iopub_msg(timeout=left))
            except queue.Empty:
                return

    def execute(self, code: str, timeout: float = 120) -> list[dict]:
        """Run code, handling iopub until the kernel is idle again; return the new outputs."""
        before = len(self.outputs)
        msg_id = self.kc.execute(code)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                msg = self.kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            self._handle(msg)
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"
            ):
                new = self.outputs[before:]
                errors = [o for o in new if o["type"] == "error"]
                if errors:
                    raise AssertionError("kernel error:\n" + "\n".join(errors[0]["traceback"]))
                return new
        raise TimeoutError(f"kernel still busy after {timeout} s running:\n{code}")

    # -- messages to the kernel, as the browser sends them

    def _send(self, comm_id: str, data: dict) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)

    def set(self, model: Model, **state) -> None:
        """The user changed a control."""
        self._send(model.comm_id, {"method": "update", "state": state, "buffer_paths": []})

    def click(self, model: Model) -> None:
        """The user pressed a button."""
        self._send(model.comm_id, {"method": "custom", "content": {"event": "click"}})

    def find(self, model_name: str, **state) -> Model:
        """The one model of this kind whose state matches."""
        found = [
            m
            for m in self.models.values()
            if m.name == model_name and all(m.state.get(k) == v for k, v in state.items())
        ]
        if len(found) != 1:
            raise AssertionError(f"{len(found)} {model_name} models match {state}")
        return found[0]

    def wait_for(self, predicate, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump(0.2)
            if predicate():
                return
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")
