"""dpkit.views.board without a TensorBoard: the way a frame takes in each environment, and
what showing refuses (a stopped board, something else than a board), with the fix named.

References: the addresses each environment documents (TensorBoard's notebook module for
``TENSORBOARD_PROXY_URL``, jupyter-server-proxy's ``<base>proxy/<port>/``), written out here.
"""

import importlib.machinery
import sys
import types
from pathlib import Path

import pytest

from dpkit import summaries
from dpkit.views import board as board_view

ENV_VARS = ("TENSORBOARD_PROXY_URL", "JUPYTERHUB_SERVICE_PREFIX")


@pytest.fixture
def env(monkeypatch):
    """``env(**values)`` sets exactly these of the environment variables display_route reads."""
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)

    def set_env(**values):
        for name in ENV_VARS:
            monkeypatch.delenv(name, raising=False)
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_env


def test_the_names_are_the_variables_tensorboard_and_jupyterhub_read():
    assert (board_view.PROXY_ENV, board_view.HUB_PREFIX_ENV) == ENV_VARS


def test_no_proxy_means_the_loopback_address(env):
    env()
    assert board_view.display_route(6123) == board_view.Route("local", "http://127.0.0.1:6123/")


def test_a_proxy_url_gets_the_port_and_wins_over_the_hub(env):
    env(TENSORBOARD_PROXY_URL="/base/proxy/%PORT%/", JUPYTERHUB_SERVICE_PREFIX="/user/x/")
    assert board_view.display_route(6123) == board_view.Route("proxy", "/base/proxy/6123/")


def test_a_hub_with_jupyter_server_proxy_goes_through_its_path(env, monkeypatch):
    fake = types.ModuleType("jupyter_server_proxy")
    fake.__spec__ = importlib.machinery.ModuleSpec("jupyter_server_proxy", None)
    monkeypatch.setitem(sys.modules, "jupyter_server_proxy", fake)
    env(JUPYTERHUB_SERVICE_PREFIX="/user/x")
    assert board_view.display_route(6123) == board_view.Route("hub", "/user/x/proxy/6123/")


def test_a_hub_without_it_keeps_the_loopback_address_and_says_what_to_do(env, monkeypatch):
    monkeypatch.setitem(sys.modules, "jupyter_server_proxy", None)  # not importable
    env(JUPYTERHUB_SERVICE_PREFIX="/user/x/")
    way = board_view.display_route(6123)
    assert (way.kind, way.url) == ("local", "http://127.0.0.1:6123/")
    assert "install jupyter-server-proxy" in way.hint
    assert "TENSORBOARD_PROXY_URL to /user/x/proxy/%PORT%/" in way.hint


class _EndedChild:
    """Stands in for a TensorBoard child process that has exited."""

    pid = 4321

    def running(self):
        return False


@pytest.mark.parametrize("height", [0, -5, "100%", 2.5, True])
def test_a_bad_height_is_named_before_anything_is_shown(height, capsys):
    board = summaries.TensorBoard(Path("/runs/x"), 6006, _EndedChild())
    with pytest.raises(ValueError, match="height must be a positive number of pixels"):
        board_view.show(board, height=height)
    assert capsys.readouterr().out == ""


def test_a_stopped_board_is_named_with_the_fix():
    board = summaries.TensorBoard(Path("/runs/x"), 6006, _EndedChild())
    with pytest.raises(ValueError, match=r"has stopped; start it again with summaries\.launch"):
        board_view.show(board)


@pytest.mark.parametrize("wrong", [None, "/runs/x", 6006])
def test_something_else_than_a_board_is_named_with_the_fix(wrong):
    with pytest.raises(ValueError, match=r"takes the TensorBoard that summaries\.launch returns"):
        board_view.show(wrong)
