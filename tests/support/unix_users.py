"""Real Unix users for a test (tests/course/test_exchange_users.py): created with useradd,
each with a home only they may enter, all in the group ``users`` (gid 100) as every server
of deploy/jupyterhub/config.yaml is; commands run as them; removed with userdel afterwards.

Needs root and useradd/userdel (:class:`Unavailable` says why not otherwise). The users must
also run this Python: where its interpreter lives somewhere they may not read (a pyenv under
/root, say), :func:`python_for_everyone` makes a small venv from a system Python of the same
version that sees this environment's packages.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

USERS_GID = 100  # Debian's "users"; the hub's servers run in it (config.yaml's gid)


class Unavailable(RuntimeError):
    """Real users cannot be made or used here; the message says why."""


def check_machine() -> None:
    if os.geteuid() != 0:
        raise Unavailable("creating Unix users needs root")
    missing = [tool for tool in ("useradd", "userdel") if not shutil.which(tool)]
    if missing:
        raise Unavailable(f"no {', '.join(missing)} here")
    try:
        import grp

        grp.getgrgid(USERS_GID)
    except KeyError:
        raise Unavailable(f"no group with gid {USERS_GID} (users) here") from None


class Users:
    """Users named ``<prefix><random>-<name>``, made in ``top/home``; ``remove()`` deletes
    them and everything under ``top``."""

    def __init__(self, top: Path):
        self.top = top
        self.tag = f"dpx{secrets.token_hex(2)}"
        self.made: dict[str, str] = {}  # short name -> login name
        self.python: Path | None = None

    def add(self, name: str) -> str:
        login = f"{self.tag}-{name}"
        home = self.top / "home" / login
        home.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["useradd", "--create-home", "--home-dir", str(home), "--gid", str(USERS_GID),
             "--shell", "/bin/sh", login],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise Unavailable(f"useradd {login} failed: {done.stderr.strip()}")
        self.made[name] = login
        home.chmod(0o700)  # as a user's own volume on the hub: nobody else mounts it
        return login

    def home(self, name: str) -> Path:
        return self.top / "home" / self.made[name]

    def uid(self, name: str) -> int:
        import pwd

        return pwd.getpwnam(self.made[name]).pw_uid

    def run(self, name: str, argv: list[str], cwd: Path | None = None, **env: str):
        """Run ``argv`` as user ``name`` (their uid, gid 100, no other group), in a clean
        environment: their HOME, ``PATH`` with the shared Python first, and ``env``."""
        python_bin = str(self.python.parent) if self.python else ""
        base = {
            "HOME": str(self.home(name)),
            "USER": self.made[name],
            "LOGNAME": self.made[name],
            "PATH": os.pathsep.join(p for p in (python_bin, "/usr/bin", "/bin") if p),
            "LANG": "C.UTF-8",
            "TF_CPP_MIN_LOG_LEVEL": "3",
        }
        return subprocess.run(
            argv,
            cwd=cwd or self.home(name),
            env={**base, **env},
            user=self.uid(name),
            group=USERS_GID,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=600,
        )

    def remove(self) -> None:
        for login in self.made.values():
            subprocess.run(["userdel", "--remove", login], capture_output=True)
        shutil.rmtree(self.top, ignore_errors=True)


def _runs_as(users: Users, name: str, python: str) -> bool:
    try:
        probe = users.run(name, [python, "-c", "import nbgrader, nbformat"])
    except OSError:  # not even executable for them
        return False
    return probe.returncode == 0


def python_for_everyone(users: Users, name: str) -> Path:
    """A Python that user ``name`` can run, with this environment's packages: this one if
    they may, else a venv of a system Python of the same version, in ``users.top``, whose
    site-packages adds this environment's (a .pth file), with an ``alembic`` command beside it
    (nbgrader runs alembic to create a gradebook)."""
    if _runs_as(users, name, sys.executable):
        users.python = Path(sys.executable)
        return users.python
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [shutil.which(f"python{version}"), f"/usr/bin/python{version}"]
    base = next(
        (c for c in candidates if c and Path(c).exists() and _runs_as_plain(users, name, c)), None
    )
    if base is None:
        raise Unavailable(
            f"{sys.executable} is not readable by other users and there is no system "
            f"python{version} they can run"
        )
    venv = users.top / "python"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    ours = sysconfig.get_paths()["purelib"]
    (purelib / "dpkit_shared_env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    alembic = venv / "bin" / "alembic"
    shebang = f"#!{venv / 'bin' / 'python'}\n"
    alembic.write_text(shebang + "import sys\nfrom alembic.config import main\nsys.exit(main())\n")
    alembic.chmod(0o755)
    users.python = venv / "bin" / "python"
    if not _runs_as(users, name, str(users.python)):
        raise Unavailable(f"{users.python} does not import nbgrader as another user")
    return users.python


def _runs_as_plain(users: Users, name: str, python: str) -> bool:
    try:
        probe = users.run(name, [python, "-c", "import sys; print(sys.version_info[:2])"])
    except OSError:
        return False
    return probe.returncode == 0 and probe.stdout.strip() == str(sys.version_info[:2])
