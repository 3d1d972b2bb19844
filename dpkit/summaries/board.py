"""The TensorBoard process: launch it on a run's folder, show it inline, stop it (lesson 06).

Introduced in lesson 06. :func:`launch` starts TensorBoard as a child process bound to
127.0.0.1, shows it inline, and reuses or replaces an instance for the same folder;
:func:`stop` ends it. The child is a ``dpkit._procs.Child``: it is also ended when this
Python process exits, however it exits (it watches for its parent's death itself). Where
the browser is not on the kernel's machine (Colab, Binder, a JupyterHub) the frame goes
through a proxy; :func:`display_route` says which (``$TENSORBOARD_PROXY_URL`` chooses one
by hand).
"""

from __future__ import annotations

import contextlib
import html
import importlib.util
import io
import json
import os
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from dpkit import _checks, _procs
from dpkit.summaries.logs import check_logdir, require_tensorboard

#: The address TensorBoard listens on: this machine only.
HOST = "127.0.0.1"

#: TensorBoard's address as the browser reaches it, ``%PORT%`` standing for its port, e.g.
#: ``/base/proxy/%PORT%/`` behind jupyter-server-proxy (TensorBoard's ``%tensorboard`` reads
#: the same variable).
PROXY_ENV = "TENSORBOARD_PROXY_URL"

#: Set by JupyterHub (and so Binder) in the server's and the kernels' environment.
HUB_PREFIX_ENV = "JUPYTERHUB_SERVICE_PREFIX"

#: The child's script (``python -c SERVE --logdir ...``): TensorBoard, and a thread that
#: ends it when its parent dies, even by SIGKILL (``_procs.child_env`` makes dpkit
#: importable and names the parent).
SERVE = """
import sys
from dpkit import _procs
_procs.watch_parent()
from tensorboard import main
sys.argv = ["tensorboard", *sys.argv[1:]]
main.run_main()
"""


class TensorBoard:
    """A TensorBoard child process serving one logdir on ``http://127.0.0.1:<port>/``.

    Attributes:
        logdir: the folder it serves (absolute).
        port: the port it listens on.
    """

    def __init__(self, logdir: Path, port: int, child: _procs.Child):
        self.logdir, self.port, self._child = logdir, port, child

    @property
    def pid(self) -> int:
        return self._child.pid

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

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
    except (urllib.error.URLError, OSError):
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
    timeout = _checks.positive_seconds(timeout, "timeout")
    if not _checks.is_whole(height) or height <= 0:
        raise ValueError(f"height must be a positive number of pixels, got {height!r}.")
    path = check_logdir(logdir, allow_empty=allow_empty).resolve()
    old = _INSTANCES.get(path)
    if old is not None and old.running() and not replace:
        if display:
            _show(old, height, reused=True)
        return old
    if old is not None:
        old.stop()
    board = _start(path, timeout)
    _INSTANCES[path] = board
    if display:
        _show(board, height, reused=False)
    return board


def _start(path: Path, timeout: float) -> TensorBoard:
    last_error = ""
    for _attempt in range(3):  # another program may take the free port before TensorBoard
        port = _procs.free_port(HOST)
        args = ["--logdir", path, "--host", HOST, "--port", port]
        child = _procs.Child(  # no lines queue: stdout and stderr go to its log (output())
            [sys.executable, "-c", SERVE, *args], name="tensorboard", kind="tensorboard"
        )
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
    return Route(
        "local",
        local,
        "(a JupyterHub without jupyter-server-proxy in this kernel's environment: a browser "
        "on another machine cannot open 127.0.0.1; install jupyter-server-proxy and restart "
        "the server, or, if the server has it, set TENSORBOARD_PROXY_URL to "
        f"{prefix.rstrip('/')}/proxy/%PORT%/)",
    )


# In Jupyter the frame's address is made in the browser, against the page's own address,
# as tensorboard.notebook does: a proxy path like /user/x/proxy/6006/ then resolves on
# whatever host and scheme the notebook is served from. Its public display() is not used
# here because it prints a "Selecting TensorBoard ..." line of its own, takes the proxy
# only from os.environ["TENSORBOARD_PROXY_URL"] (the hub route would have to set it in the
# learner's environment), and without one swaps the port into the page's host name, where
# dpkit prints and serves 127.0.0.1.
_FRAME = """<iframe id="{id}" width="100%" height="{height}" frameborder="0"></iframe>
<script>
  (function() {{
    const frame = document.getElementById({json_id});
    frame.src = new URL({json_url}, window.location);
  }})();
</script>"""


def _frame_html(url: str, height: int) -> str:
    frame_id = f"dpkit-tensorboard-{os.urandom(8).hex()}"

    def js(text: str) -> str:  # a JSON string that cannot close the <script> element
        return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e")

    return _FRAME.format(
        id=html.escape(frame_id), height=int(height), json_id=js(frame_id), json_url=js(url)
    )


def _show(board: TensorBoard, height: int, *, reused: bool) -> None:
    verb = "already running" if reused else "started"
    from dpkit import widgets

    if not widgets.frontend():  # a test run or a terminal: a frame nobody sees would go stale
        print(f"TensorBoard {verb} at {board.url} (pid {board.pid}); summaries.stop() ends it.")
        print("(no notebook display here: open the address in a browser on this machine)")
        return
    way = display_route(board.port)
    if way.kind == "colab":
        print(
            f"TensorBoard {verb} on port {board.port} (pid {board.pid}), shown below through "
            "Colab's port proxy; summaries.stop() ends it."
        )
        import tensorboard.notebook

        # Colab's proxy is Colab's own JavaScript API, which TensorBoard keeps up with. Its
        # display also prints "Selecting TensorBoard with logdir ..." (our child registers
        # itself where TensorBoard looks): not ours to show.
        with contextlib.redirect_stdout(io.StringIO()):
            tensorboard.notebook.display(port=board.port, height=height)
        return
    if way.kind == "local":
        print(f"TensorBoard {verb} at {board.url} (pid {board.pid}); summaries.stop() ends it.")
    else:
        print(
            f"TensorBoard {verb} at {way.url} (proxied to {board.url}, pid {board.pid}); "
            "summaries.stop() ends it."
        )
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
    if logdir is None:
        boards = list(_INSTANCES.values())
    else:
        board = _INSTANCES.get(Path(logdir).resolve())
        boards = [board] if board is not None else []
    for board in boards:
        board.stop()
    return len(boards)
