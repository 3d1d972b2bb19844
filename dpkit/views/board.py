"""TensorBoard in a frame below the cell (lesson 06): :func:`show` the board that
:func:`dpkit.summaries.launch` started.

TensorBoard listens on 127.0.0.1 of the kernel's machine, which only a browser on that
machine can open; elsewhere the frame goes through a proxy (:func:`display_route` says
which). No widgets: the frame is HTML. Where nobody watches (a terminal, a test run,
``DPKIT_WIDGETS=text``: :func:`dpkit.plumbing.notebook.frontend`) it prints a line instead.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
from dataclasses import dataclass

from dpkit.plumbing import checks, notebook
from dpkit.summaries.board import HOST, TensorBoard

#: TensorBoard's address as the browser reaches it, ``%PORT%`` standing for its port, e.g.
#: ``/base/proxy/%PORT%/`` behind jupyter-server-proxy (as for TensorBoard's ``%tensorboard``).
PROXY_ENV = "TENSORBOARD_PROXY_URL"

#: Set by JupyterHub (and so Binder) in the server's and the kernels' environment.
HUB_PREFIX_ENV = "JUPYTERHUB_SERVICE_PREFIX"


@dataclass(frozen=True)
class Route:
    """How a notebook shows TensorBoard (see :func:`display_route`)."""

    # "colab" (Colab's port proxy), "proxy" ($TENSORBOARD_PROXY_URL), "hub" (jupyter-server-
    # proxy under $JUPYTERHUB_SERVICE_PREFIX) or "local" (the browser is on this machine)
    kind: str
    # where the frame points, the port filled in (a path is relative to the notebook page's
    # address); None on Colab, whose proxy picks the address
    url: str | None
    hint: str = ""  # what to do if the frame stays blank


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


def show(board: TensorBoard, height: int = 800) -> None:
    """Show a running TensorBoard in a frame below the cell.

    The frame points where :func:`display_route` says the browser reaches it; through a
    proxy, a line says which address it took. Without a notebook front end nothing is
    displayed and a line says so (the address is the one ``summaries.launch`` printed).
    ``board`` is what :func:`dpkit.summaries.launch` returned, still running.
    """
    if not checks.is_whole(height) or height <= 0:
        raise ValueError(f"height must be a positive number of pixels, got {height!r}.")
    if not isinstance(board, TensorBoard):
        raise ValueError(
            f"show takes the TensorBoard that summaries.launch returns, got {board!r}; "
            "write board = summaries.launch(run.dir), then show(board)."
        )
    if not board.running():
        raise ValueError(
            f"{board!r} has stopped; start it again with summaries.launch({str(board.logdir)!r})."
        )
    if not notebook.frontend():  # a test run or a terminal: nobody would see a frame
        print("(no notebook display here: open the address in a browser on this machine)")
        return
    way = display_route(board.port)
    if way.kind == "colab":
        print(f"TensorBoard on port {board.port} is shown below through Colab's port proxy.")
        import tensorboard.notebook

        # Colab's proxy is Colab's own JavaScript API, which TensorBoard keeps up with; its
        # "Selecting TensorBoard with logdir ..." line is not ours to show.
        with contextlib.redirect_stdout(io.StringIO()):
            tensorboard.notebook.display(port=board.port, height=height)
        return
    if way.kind != "local":
        print(f"TensorBoard is shown below through {way.url} (proxied to {board.url}).")
    if way.hint:
        print(way.hint)
    from IPython.display import HTML, display

    display(HTML(_frame_html(way.url, height)))
