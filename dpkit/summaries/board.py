"""The TensorBoard process (introduced in lesson 06): launch it on a run's folder, stop it.

Showing it in the notebook is a view's job: :func:`dpkit.views.board.show` puts it in a
frame below the cell, through a proxy where the browser is on another machine.
"""

from __future__ import annotations

import sys
import time
import urllib.request
from pathlib import Path

from dpkit.plumbing import checks, procs
from dpkit.summaries.logs import check_logdir, require_tensorboard

#: The address TensorBoard listens on: this machine only.
HOST = "127.0.0.1"

#: The child's script (``python -c SERVE --logdir ...``): TensorBoard, ended by a thread when
#: its parent dies, even by SIGKILL (``procs.child_env`` makes dpkit importable).
SERVE = """
import sys
from dpkit.plumbing import procs
procs.watch_parent()
from tensorboard import main
sys.argv = ["tensorboard", *sys.argv[1:]]
main.run_main()
"""


class TensorBoard:
    """A TensorBoard child process serving one logdir (absolute) on ``url``,
    ``http://127.0.0.1:<port>/``; ``pid`` is its process id."""

    def __init__(self, logdir: Path, port: int, child: procs.Child):
        self.logdir, self.port, self._child = logdir, port, child
        self.url, self.pid = f"http://{HOST}:{port}/", child.pid

    def running(self) -> bool:
        return self._child.running()

    def output(self) -> str:
        """What TensorBoard printed (its log), for diagnosing a failed start."""
        return self._child.output()

    def stop(self, timeout: float = 10.0) -> None:
        """End the process (and its data-loading helper) and reap it.

        SIGTERM first (TensorBoard cleans up its helper), SIGKILL after ``timeout`` seconds.
        """
        self._child.close(grace=timeout)
        if _INSTANCES.get(self.logdir) is self:
            del _INSTANCES[self.logdir]

    def __repr__(self) -> str:
        state = "running" if self.running() else "stopped"
        return f"TensorBoard({self.url}, pid {self.pid}, {state}, logdir={str(self.logdir)!r})"


_INSTANCES: dict[Path, TensorBoard] = {}


def _answers(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    try:
        with opener.open(url + "data/logdir", timeout=2) as response:
            return response.status == 200
    except OSError:  # urllib's URLError (no answer yet) is an OSError
        return False


def launch(
    logdir, *, replace: bool = False, timeout: float = 90.0, allow_empty=False
) -> TensorBoard:
    """Start TensorBoard on ``logdir``, bound to 127.0.0.1 on a free port, and print where.

    One instance per logdir: if one is already running for the same folder it is reused
    (``replace=True`` stops it and starts a new one). The child is ended by :func:`stop`,
    when this Python process exits, and if starting it fails. To see it in the notebook,
    pass the board to :func:`dpkit.views.board.show`. ``logdir`` is a run's ``dir`` or a
    folder of runs; ``allow_empty`` accepts a folder without event files yet (to watch a run
    start); ``timeout`` is how long TensorBoard may take to answer.
    """
    require_tensorboard()
    timeout = checks.positive_seconds(timeout, "timeout")
    path = check_logdir(logdir, allow_empty=allow_empty).resolve()
    board = _INSTANCES.get(path)
    reused = board is not None and board.running() and not replace
    if not reused:
        if board is not None:
            board.stop()
        board = _INSTANCES[path] = _start(path, timeout)
    verb = "already running" if reused else "started"
    print(f"TensorBoard {verb} at {board.url} (pid {board.pid}); summaries.stop() ends it.")
    return board


def _start(path: Path, timeout: float) -> TensorBoard:
    for _attempt in range(3):  # another program may take the free port before TensorBoard
        port = procs.free_port(HOST)
        argv = [sys.executable, "-c", SERVE, "--logdir", path, "--host", HOST, "--port", port]
        # stdout and stderr go to its log; SIGTERM at exit lets it clean up its files
        child = procs.Child(argv, name="tensorboard", kind="tensorboard", grace=5.0)
        board = TensorBoard(path, port, child)
        try:
            deadline = time.monotonic() + timeout
            while not _answers(board.url):
                if not board.running():
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"TensorBoard did not answer on {board.url} within {timeout:.0f} s; "
                        f"its output:\n{board.output()[-2000:]}\nTry again with a longer timeout."
                    )
                time.sleep(0.25)
            else:
                return board
        except BaseException:
            board.stop()
            raise
        last_error = board.output()[-2000:]
        board.stop()
        if "already in use" not in last_error:
            break
    raise RuntimeError(f"TensorBoard exited before it answered; its output:\n{last_error}")


def running() -> list[TensorBoard]:
    """The TensorBoard instances this process started that are still running."""
    return [b for b in _INSTANCES.values() if b.running()]


def stop(logdir=None) -> int:
    """Stop the TensorBoard serving ``logdir`` (default: every one this process started);
    return how many were stopped."""
    paths = list(_INSTANCES) if logdir is None else [Path(logdir).resolve()]
    boards = [_INSTANCES[path] for path in paths if path in _INSTANCES]
    for board in boards:
        board.stop()
    return len(boards)
