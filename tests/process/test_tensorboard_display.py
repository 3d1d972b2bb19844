"""dpkit.views.board shows TensorBoard where the browser can reach it: loopback, a proxy, Colab.

One real TensorBoard child (``summaries.launch``) serves a run for the module; each test sets
up one environment (plain local, ``TENSORBOARD_PROXY_URL``, a JupyterHub prefix with and
without jupyter-server-proxy, Colab faked by a ``google.colab`` module) and checks what
``board_view.show`` prints and what it hands to IPython's ``display``: the frame's address
in the HTML and script dpkit emits, or the Colab script TensorBoard's own notebook module
emits for our port. Without a notebook front end, launch and show together print exactly
what lesson 06 commits.

References: the addresses each environment documents (TensorBoard's notebook module for
``TENSORBOARD_PROXY_URL`` and Colab, jupyter-server-proxy's ``<base>proxy/<port>/``), and
TensorBoard's own HTTP API answering at the loopback address the frame points to.
"""

import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import types
import urllib.request
from pathlib import Path

import IPython
import pytest
import tensorflow as tf

from dpkit import summaries
from dpkit.plumbing import contract
from dpkit.views import board as board_view

ENV_VARS = ("TENSORBOARD_PROXY_URL", "JUPYTERHUB_SERVICE_PREFIX", contract.WIDGETS)
FRAME_URL = re.compile(r"new URL\((\"[^\"]*\"), window\.location\)")


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    run = summaries.open_run("display", "run1", root=tmp_path_factory.mktemp("runs"))
    with run.train.as_default():
        tf.summary.scalar("loss", 1.0, step=0)
    run.close()
    board = summaries.launch(run.dir)
    yield board
    summaries.stop()
    assert not board.running()


@pytest.fixture
def shown(monkeypatch, capsys):
    """``shown(**env)`` shows the running board in that environment; returns (text, displayed)."""
    displayed = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: displayed.extend(objs))

    def show(board, *, widgets="widgets", **env):
        for name in ENV_VARS:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv(contract.WIDGETS, widgets)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        before = dict(os.environ)
        capsys.readouterr()
        assert board_view.show(board) is None
        assert dict(os.environ) == before, "showing TensorBoard changed the environment"
        return capsys.readouterr().out, displayed

    return show


def _frame_url(displayed) -> str:
    (obj,) = displayed
    assert isinstance(obj, IPython.display.HTML), obj
    assert re.search(r'<iframe id="dpkit-tensorboard-[0-9a-f]+" width="100%"', obj.data)
    assert 'height="800"' in obj.data
    (url,) = FRAME_URL.findall(obj.data)
    return json.loads(url)


def _launch_line(board, verb="already running") -> str:
    return (
        f"TensorBoard {verb} at http://127.0.0.1:{board.port}/ (pid {board.pid}); "
        "summaries.stop() ends it.\n"
    )


def _proxied_line(board, url) -> str:
    return (
        f"TensorBoard is shown below through {url} (proxied to http://127.0.0.1:{board.port}/).\n"
    )


def test_launching_again_reuses_the_board_and_prints_where_it_listens(board, capsys):
    capsys.readouterr()
    assert summaries.launch(board.logdir) is board
    assert capsys.readouterr().out == _launch_line(board)


def test_local_frame_points_at_the_loopback_address_tensorboard_answers_on(board, shown):
    out, displayed = shown(board)
    assert out == ""  # launch printed the address; the frame is all show adds
    url = _frame_url(displayed)
    assert url == f"http://127.0.0.1:{board.port}/"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url + "data/logdir", timeout=10) as response:  # TensorBoard's own API
        assert json.loads(response.read())["logdir"] == str(board.logdir)
    assert board_view.display_route(board.port) == board_view.Route("local", url)


def test_tensorboard_proxy_url_gets_the_port_and_wins_over_the_hub(board, shown):
    out, displayed = shown(
        board,
        TENSORBOARD_PROXY_URL="/base/proxy/%PORT%/",
        JUPYTERHUB_SERVICE_PREFIX="/user/learner/",
    )
    url = f"/base/proxy/{board.port}/"
    assert out == _proxied_line(board, url)
    assert _frame_url(displayed) == url


def test_absolute_proxy_url_is_kept_and_cannot_close_the_script(board, shown):
    out, displayed = shown(board, TENSORBOARD_PROXY_URL="https://lab.example/tb/%PORT%/</script>")
    url = f"https://lab.example/tb/{board.port}/</script>"
    assert out == _proxied_line(board, url)
    assert _frame_url(displayed) == url
    assert displayed[0].data.count("</script>") == 1  # only the element's own end


@pytest.mark.parametrize("prefix", ["/user/learner/", "/user/learner"])
def test_hub_prefix_with_jupyter_server_proxy_goes_through_its_proxy_path(
    board, shown, monkeypatch, prefix
):
    if importlib.util.find_spec("jupyter_server_proxy") is None:  # not installed: stand in
        fake = types.ModuleType("jupyter_server_proxy")
        fake.__spec__ = importlib.machinery.ModuleSpec("jupyter_server_proxy", None)
        monkeypatch.setitem(sys.modules, "jupyter_server_proxy", fake)
    out, displayed = shown(board, JUPYTERHUB_SERVICE_PREFIX=prefix)
    url = f"/user/learner/proxy/{board.port}/"
    assert out == _proxied_line(board, url)
    assert _frame_url(displayed) == url
    assert board_view.display_route(board.port).kind == "hub"
    assert "TENSORBOARD_PROXY_URL" not in os.environ  # the learner's environment is left alone


def test_hub_prefix_without_jupyter_server_proxy_falls_back_and_says_what_to_do(
    board, shown, monkeypatch
):
    monkeypatch.setitem(sys.modules, "jupyter_server_proxy", None)  # not importable
    out, displayed = shown(board, JUPYTERHUB_SERVICE_PREFIX="/user/learner/")
    (hint,) = out.splitlines()
    assert "install jupyter-server-proxy" in hint
    assert "TENSORBOARD_PROXY_URL to /user/learner/proxy/%PORT%/" in hint
    assert _frame_url(displayed) == f"http://127.0.0.1:{board.port}/"


@pytest.fixture
def colab(monkeypatch):
    """A stand-in for Colab: ``google.colab`` imports and IPython has a shell."""
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=None))


def test_colab_uses_tensorboards_colab_display_for_our_port(board, shown, colab):
    out, displayed = shown(board, JUPYTERHUB_SERVICE_PREFIX="/user/learner/")
    # Only dpkit's line: TensorBoard's "Selecting TensorBoard with ..." is not shown.
    assert out == f"TensorBoard on port {board.port} is shown below through Colab's port proxy.\n"
    (script,) = displayed
    assert isinstance(script, IPython.display.Javascript), script
    assert f"google.colab.kernel.proxyPort({board.port}, " in script.data
    assert "iframe.setAttribute('height', '800')" in script.data
    assert board_view.display_route(board.port) == board_view.Route("colab", None)


def test_without_a_front_end_the_text_is_lesson_06s_whatever_the_environment(board, shown, colab):
    out, displayed = shown(
        board,
        widgets="text",
        TENSORBOARD_PROXY_URL="/base/proxy/%PORT%/",
        JUPYTERHUB_SERVICE_PREFIX="/user/learner/",
    )
    assert out == "(no notebook display here: open the address in a browser on this machine)\n"
    assert displayed == []
    # Lesson 06's TensorBoard cell (launch, then show) and its committed output, line by line.
    (source,), (output,) = _lesson_06_launch_cell()
    assert "board = summaries.launch(run.dir)" in source
    assert "board_view.show(board)" in source
    printed = (_launch_line(board, "started") + out).splitlines()
    committed = "".join(output["text"]).splitlines()
    numbers = re.compile(r"\d+")
    assert [numbers.sub("N", line) for line in committed] == [
        numbers.sub("N", line) for line in printed
    ]


def _lesson_06_launch_cell():
    lesson = Path(__file__).parents[2] / "lessons" / "06_tensorboard.ipynb"
    cells = json.loads(lesson.read_text())["cells"]
    found = [c for c in cells if "summaries.launch(" in "".join(c["source"])]
    found = [c for c in found if c["cell_type"] == "code"]
    return ["".join(c["source"]) for c in found], [o for c in found for o in c["outputs"]]


def test_a_fresh_start_behind_a_proxy_prints_the_proxied_path(tmp_path, monkeypatch, capsys):
    with tf.summary.create_file_writer(str(tmp_path / "train")).as_default():
        tf.summary.scalar("loss", 2.0, step=0)
    displayed = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: displayed.extend(objs))
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(contract.WIDGETS, "widgets")
    monkeypatch.setenv("TENSORBOARD_PROXY_URL", "/user/learner/proxy/%PORT%/")
    capsys.readouterr()
    board = summaries.launch(tmp_path)
    try:
        board_view.show(board, height=300)
        out = capsys.readouterr().out
        url = f"/user/learner/proxy/{board.port}/"
        assert out == _launch_line(board, "started") + _proxied_line(board, url)
        (frame,) = displayed
        assert 'height="300"' in frame.data
        assert json.loads(FRAME_URL.search(frame.data).group(1)) == url
    finally:
        summaries.stop(tmp_path)
    assert not board.running()
