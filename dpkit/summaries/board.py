"""The TensorBoard process (introduced in lesson 06): launch it on a run's folder, show it
inline (through a proxy where the browser is elsewhere: :func:`display_route`), stop it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from dpkit.plumbing import checks, notebook, procs
from dpkit.summaries.logs import check_logdir, require_tensorboard

#: The address TensorBoard listens on: this machine only.
HOST = "127.0.0.1"

#: TensorBoard's address as the browser reaches it, ``%PORT%`` standing for its port, e.g.
#: ``/base/proxy/%PORT%/`` behind jupyter-server-proxy (as for TensorBoard's ``%tensorboard``).
PROXY_ENV = "TENSORBOARD_PROXY_URL"

#: Set by JupyterHub (and so Binder) in the server's and the kernels' environment.
HUB_PREFIX_ENV = "JUPYTERHUB_SERVICE_PREFIX"

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
    """A TensorBoard child process serving one logdir on ``http://127.0.0.1:<port>/``.

    Attributes:
        logdir: the folder it serves (absolute).
        port, url, pid: the port it listens on, its address, its process id.
    """

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
    logdir,
    *,
    replace: bool = False,
    display: bool = True,
    height: int = 800,
    timeout: float = 90.0,
    allow_empty: bool = False,
) -> TensorBoard:
    """Start TensorBoard on ``logdir``, bound to 127.0.0.1 on a free port, and show it inline.

    One instance per logdir: if one is already running for the same folder it is reused
    (``replace=True`` stops it and starts a new one). The child is ended by :func:`stop`,
    when this Python process exits, and if starting it fails.

    Args:
        logdir: the folder to serve (a run's ``dir`` or a folder of runs).
        replace: stop a running instance for the same folder and start afresh.
        display: show TensorBoard in the notebook (a frame, through a proxy where
            :func:`display_route` finds one) and print its address.
        height: the frame's height in pixels.
        timeout: seconds to wait for TensorBoard to answer.
        allow_empty: accept a folder without event files yet (to watch a run start).

    Returns:
        The :class:`TensorBoard` (``.url``, ``.pid``, ``.port``, ``.stop()``).

    Raises:
        ValueError: ``logdir`` missing or empty, or a bad ``timeout`` or ``height``.
        RuntimeError: TensorBoard is not installed, exited, or did not answer in time.
    """
    require_tensorboard()
    timeout = checks.positive_seconds(timeout, "timeout")
    if not checks.is_whole(height) or height <= 0:
        raise ValueError(f"height must be a positive number of pixels, got {height!r}.")
    path = check_logdir(logdir, allow_empty=allow_empty).resolve()
    board = _INSTANCES.get(path)
    reused = board is not None and board.running() and not replace
    if not reused:
        if board is not None:
            board.stop()
        board = _INSTANCES[path] = _start(path, timeout)
    if display:
        _show(board, height, reused=reused)
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


@dataclass(frozen=True)
class Route:
    """How a notebook shows TensorBoard (see :func:`display_route`).

    Attributes:
        kind: ``"colab"`` (Colab's port proxy), ``"proxy"`` (``$TENSORBOARD_PROXY_URL``),
            ``"hub"`` (jupyter-server-proxy under ``$JUPYTERHUB_SERVICE_PREFIX``) or
            ``"local"`` (the loopback address: the browser is on this machine).
        url: where the frame points, the port filled in; a path is taken relative to the
            notebook page's address. ``None`` on Colab, whose proxy picks the address.
        hint: what to do if the frame stays blank, or ``""``.
    """

    kind: str
    url: str | None
    hint: str = ""


def _in_colab() -> bool:
    # The same test as tensorboard.notebook's: google.colab imports, in an IPython shell.
    try:
        import google.colab  # noqa: F401
        import IPython
    except ImportError:
        return False
    return IPython.get_ipython() is not None


def display_route(port: int) -> Route:
    """Which way a notebook frame reaches a TensorBoard on 127.0.0.1:``port``.

    In order: on Colab, Colab's port proxy (through TensorBoard's own notebook display);
    ``$TENSORBOARD_PROXY_URL`` when set, ``%PORT%`` replaced by the port; on a JupyterHub
    or Binder (``$JUPYTERHUB_SERVICE_PREFIX`` set) with jupyter-server-proxy installed,
    ``<prefix>proxy/<port>/``; otherwise ``http://127.0.0.1:<port>/``, which only a
    browser on this machine can open. Reads the environment, changes nothing.
    """
    if _in_colab():
        return Route("colab", None)
    proxy = os.environ.get(PROXY_ENV, "")
    if proxy:
        return Route("proxy", proxy.replace("%PORT%", str(port)))
    local = f"http://{HOST}:{port}/"
    prefix = os.environ.get(HUB_PREFIX_ENV, "")
    if not prefix:
        return Route("local", local)
    if importlib.util.find_spec("jupyter_server_proxy") is not None:
        return Route("hub", f"{prefix.rstrip('/')}/proxy/{port}/")
    hint = (
        "(a JupyterHub without jupyter-server-proxy in this kernel's environment: a browser "
        "on another machine cannot open 127.0.0.1; install jupyter-server-proxy and restart "
        "the server, or, if the server has it, set TENSORBOARD_PROXY_URL to "
        f"{prefix.rstrip('/')}/proxy/%PORT%/)"
    )
    return Route("local", local, hint)


# The browser makes the frame's address against the page's own, as tensorboard.notebook does,
# so a proxy path like /user/x/proxy/6006/ works on any host and scheme. Its display() is not
# used: it prints a line of its own, reads the proxy only from os.environ, and without one
# points at the page's host name, not at the 127.0.0.1 dpkit serves.
_FRAME = """<iframe id="{id}" width="100%" height="{height}" frameborder="0"></iframe>
<script>
  (function() {{
    const frame = document.getElementById({json_id});
    frame.src = new URL({json_url}, window.location);
  }})();
</script>"""


def _js(text: str) -> str:  # a JSON string that cannot close the <script> element
    return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e")


def _frame_html(url: str, height: int) -> str:
    frame_id = f"dpkit-tensorboard-{os.urandom(8).hex()}"  # letters, digits and '-' only
    return _FRAME.format(id=frame_id, height=int(height), json_id=_js(frame_id), json_url=_js(url))


def _show(board: TensorBoard, height: int, *, reused: bool) -> None:
    frame = notebook.frontend()  # none in a test run or a terminal: nobody would see a frame
    way = display_route(board.port) if frame else Route("local", board.url)
    if way.kind == "colab":
        where = f"on port {board.port} (pid {board.pid}), shown below through Colab's port proxy"
    elif way.kind == "local":
        where = f"at {board.url} (pid {board.pid})"
    else:
        where = f"at {way.url} (proxied to {board.url}, pid {board.pid})"
    verb = "already running" if reused else "started"
    print(f"TensorBoard {verb} {where}; summaries.stop() ends it.")
    if not frame:
        print("(no notebook display here: open the address in a browser on this machine)")
    elif way.kind == "colab":
        import tensorboard.notebook

        # Colab's proxy is Colab's own JavaScript API, which TensorBoard keeps up with; its
        # "Selecting TensorBoard with logdir ..." line is not ours to show.
        with contextlib.redirect_stdout(io.StringIO()):
            tensorboard.notebook.display(port=board.port, height=height)
    else:
        if way.hint:
            print(way.hint)
        from IPython.display import HTML, display

        display(HTML(_frame_html(way.url, height)))


def running() -> list[TensorBoard]:
    """The TensorBoard instances this process started that are still running."""
    return [b for b in _INSTANCES.values() if b.running()]


def stop(logdir=None) -> int:
    """Stop the TensorBoard serving ``logdir`` (default: every one this process started).

    Returns:
        How many were stopped.
    """
    paths = list(_INSTANCES) if logdir is None else [Path(logdir).resolve()]
    boards = [_INSTANCES[path] for path in paths if path in _INSTANCES]
    for board in boards:
        board.stop()
    return len(boards)
