"""deploy/jupyterhub/Dockerfile's two scripts, run here without Docker.

* students_lab.sh, in a Python prefix that stands for the image's: a small venv that sees this
  environment's packages, holding nbgrader's own server config as pip installs it into the
  image's prefix. After the script, a server there would load nbgrader's assignment list and
  validate extensions only, and JupyterLab would show none of its formgrader, course list or
  create-assignment plugins, locked. The script's last step is shown to refuse a prefix where
  nothing was disabled: jupyter's disable commands exit 0 even when they change nothing.
* entrypoint.sh, run as a uid with no name (root only: elsewhere it skips, unless
  DPKIT_REQUIRE_UNIX_USERS is set, as in .ci/run): it names the uid jovyan, once, and runs
  the command it is given.
* The Dockerfile runs both, installs nbgrader and the hub's JupyterHub major version, and its
  .dockerignore lets no answer in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

HERE = ROOT / "deploy" / "jupyterhub"
SCRIPT = HERE / "students_lab.sh"
WANT = (
    "nbgrader for students: server extensions ['assignment_list', 'validate_assignment']; "
    "lab plugins off ['course-list', 'create-assignment', 'formgrader'], "
    "locked ['course-list', 'create-assignment', 'formgrader']"
)


def image_prefix(folder: Path) -> dict[str, str]:
    """A venv standing for the image's Python prefix; the environment to run commands in it."""
    base = getattr(sys, "_base_executable", sys.executable)
    venv = folder / "prefix"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    ours = sysconfig.get_paths()["purelib"]
    (purelib / "dpkit_image_prefix.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    # What pip's install of nbgrader puts in the prefix: all four server extensions enabled.
    conf_d = venv / "etc" / "jupyter" / "jupyter_server_config.d"
    conf_d.mkdir(parents=True)
    shutil.copy(Path(sys.prefix) / "etc/jupyter/jupyter_server_config.d/nbgrader.json", conf_d)
    # The jupyter commands, run by the prefix's Python.
    for name in ("jupyter", "jupyter-server", "jupyter-labextension"):
        body = (Path(sys.executable).parent / name).read_text().split("\n", 1)[1]
        (venv / "bin" / name).write_text(f"#!{venv / 'bin' / 'python'}\n{body}")
        (venv / "bin" / name).chmod(0o755)
    (folder / "user").mkdir()
    return {
        "PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(folder),
        "JUPYTER_CONFIG_DIR": str(folder / "user"),  # an empty user level, not root's
        "LANG": "C.UTF-8",
    }


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)


def test_the_students_lab_keeps_the_assignment_list_only(tmp_path):
    done = run(["sh", str(SCRIPT)], image_prefix(tmp_path))
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert WANT in done.stdout, log[-3000:]


def test_the_last_step_refuses_a_lab_where_nothing_was_disabled(tmp_path):
    check = SCRIPT.read_text().split("<<'CHECK'\n", 1)[1].split("\nCHECK\n", 1)[0]
    done = run(["python", "-c", check], image_prefix(tmp_path))
    assert done.returncode != 0
    assert "want server extensions ['assignment_list', 'validate_assignment']" in done.stderr
    assert "server extensions ['assignment_list', 'course_list', 'formgrader'" in done.stdout


@pytest.fixture
def nameless_uid():
    """A uid with no entry in /etc/passwd, and a copy of /etc/passwd its group may write, in
    a folder it may enter (pytest's own temporary folders are root's alone)."""
    import pwd

    if os.geteuid() != 0:
        if os.environ.get("DPKIT_REQUIRE_UNIX_USERS"):
            pytest.fail("DPKIT_REQUIRE_UNIX_USERS is set, but this is not root")
        pytest.skip("running as a uid with no name needs root")
    uid = next(u for u in range(54321, 60000) if not _known(pwd, u))
    folder = Path(tempfile.mkdtemp(prefix="dpkit-entrypoint-", dir="/tmp"))
    folder.chmod(0o755)
    passwd = folder / "passwd"
    shutil.copy("/etc/passwd", passwd)
    os.chown(passwd, 0, 100)
    passwd.chmod(0o664)  # as the Dockerfile leaves /etc/passwd
    yield uid, passwd
    shutil.rmtree(folder)


def _known(pwd, uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def test_the_entrypoint_names_a_nameless_uid_once_and_runs_the_command(nameless_uid):
    uid, passwd = nameless_uid
    before = passwd.read_text()
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/jovyan", "DPKIT_PASSWD_FILE": str(passwd)}
    for _ in range(2):
        done = subprocess.run(
            ["sh", str(HERE / "entrypoint.sh"), "sh", "-c", 'echo "ran as $(id -u)"; exit 3'],
            env=env, user=uid, group=100, extra_groups=[], capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 3 and done.stdout == f"ran as {uid}\n", done.stderr
    added = passwd.read_text()[len(before) :]
    assert added == f"jovyan:x:{uid}:100:dpkit learner:/home/jovyan:/bin/sh\n"


def test_the_entrypoint_leaves_a_named_uid_alone(tmp_path):
    passwd = tmp_path / "passwd"
    shutil.copy("/etc/passwd", passwd)
    before = passwd.read_text()
    env = {"PATH": "/usr/bin:/bin", "DPKIT_PASSWD_FILE": str(passwd)}
    done = subprocess.run(["sh", str(HERE / "entrypoint.sh"), "true"], env=env, capture_output=True)
    assert done.returncode == 0 and passwd.read_text() == before


def test_the_dockerfile_installs_nbgrader_and_runs_both_scripts():
    text = (HERE / "Dockerfile").read_text()
    assert re.search(
        r'pip install "/tmp/dpkit\[cpu,lab,grade\]" /tmp/dpkit/checks "jupyterhub==5\.5\.\*"', text
    )
    assert "RUN sh /usr/local/bin/students_lab.sh" in text
    assert 'ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]' in text
    assert "chgrp 100 /etc/passwd" in text and "chmod g+w /etc/passwd" in text
    # The chart's hub (jupyterhub 4.4.0) runs JupyterHub 5.5.0: config.yaml says which chart.
    assert "JupyterHub 5.5.0" in (HERE / "config.yaml").read_text()
    let_in = [line[1:] for line in (HERE / "Dockerfile.dockerignore").read_text().splitlines()
              if line.startswith("!")]  # fmt: skip
    assert not [
        p for p in let_in if p.split("/")[0] in {"solutions", "tests", "tools", "exercises"}
    ]
    copied = re.findall(r"^COPY (.+) \S+$", text, re.M)
    for source in " ".join(copied).split():
        assert any(source == p.rstrip("/") or source.startswith(p) for p in let_in), source
