"""Cut a release a term can pin: one commit that names its own tag, and the tag.

    python tools/release.py 0.2.0          # or: make release VERSION=0.2.0
    git push origin main v0.2.0

The commit sets pyproject's ``version`` and ``[tool.dpkit.launch] ref`` to ``v0.2.0`` (the one
place the ref is written), so every Open-in-Colab badge, Colab install cell, README's Binder
badge and the website's launch buttons open the tagged notebooks, and the Colab install
cell clones the tag: a class that starts in week 1 on v0.2.0 still opens v0.2.0 in week 8.
It rewrites the badges and install cells (tools/colab.py) and the exercises
(tools/make_exercises.py), commits, and tags that commit. Run it on a clean tree that passed
CI. ``--unpin`` points the launches back at ``main`` after the term (a commit, no tag).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402
import make_exercises  # noqa: E402

VERSION = re.compile(r"\d+\.\d+\.\d+")


class ReleaseError(Exception):
    """A release that cannot be cut as asked; the message says why and what to do."""


def _git(*args: str, check: bool = True) -> str:
    run = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if check and run.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)} failed: {run.stderr.strip()}")
    return run.stdout.strip()


def set_pins(text: str, version: str | None, ref: str) -> str:
    """pyproject.toml's text with [project] ``version`` (unless None) and the launch ``ref``."""
    if version is not None:
        text, found = re.subn(
            r'^(version\s*=\s*)"[^"]*"', rf'\g<1>"{version}"', text, count=1, flags=re.M
        )
        if not found:
            raise ReleaseError('pyproject.toml has no [project] version = "..." line.')
    head, sep, rest = text.partition("[tool.dpkit.launch]")
    rest, found = re.subn(r'^(ref\s*=\s*)"[^"]*"', rf'\g<1>"{ref}"', rest, count=1, flags=re.M)
    if not sep or not found:
        raise ReleaseError('pyproject.toml needs [tool.dpkit.launch] with a ref = "..." line.')
    return head + sep + rest


def set_binder_badge(readme: str, old_ref: str, ref: str) -> str:
    """README's Binder badge opens the repository at ``ref`` instead of ``old_ref``."""
    link = f"https://mybinder.org/v2/gh/{colab.repository()}/"
    if link + old_ref + "?" not in readme:
        raise ReleaseError(f"README.md has no Binder badge at {link}{old_ref}: fix it first.")
    return readme.replace(link + old_ref + "?", link + ref + "?")


def release(version: str | None, ref: str, *, tag: bool) -> str:
    """Pin the launches to ``ref`` in one commit (tagged ``ref`` when ``tag``); its hash."""
    if _git("status", "--porcelain"):
        raise ReleaseError(
            "the working tree has changes: commit or remove them first (git status), "
            "so that the release is exactly what CI tested."
        )
    if tag and _git("tag", "--list", ref):
        raise ReleaseError(f"the tag {ref} exists already: choose the next version.")
    old_ref = colab.ref()
    if old_ref == ref:
        raise ReleaseError(f"the launches follow {ref} already.")
    pyproject, readme = ROOT / "pyproject.toml", ROOT / "README.md"
    pyproject.write_text(set_pins(pyproject.read_text("utf-8"), version, ref), "utf-8")
    readme.write_text(set_binder_badge(readme.read_text("utf-8"), old_ref, ref), "utf-8")
    if colab.main([]) != 0 or make_exercises.main([]) != 0:
        raise ReleaseError("rewriting the badges or the exercises failed (see above).")
    what = f"Release {ref}" if tag else f"Launches follow {ref} again"
    _git("commit", "--quiet", "-a", "-m", f"{what}: badges, install cells and Binder at {ref}")
    if tag:
        _git("tag", "-a", ref, "-m", f"dpkit {version}")
    return _git("rev-parse", "HEAD")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", nargs="?", help="X.Y.Z: the commit is tagged vX.Y.Z")
    parser.add_argument("--unpin", action="store_true", help="launches follow main again")
    args = parser.parse_args(argv)
    try:
        if args.unpin == (args.version is not None):
            raise ReleaseError("give a version (e.g. 0.2.0) or --unpin, not both or neither.")
        if args.unpin:
            head = release(None, "main", tag=False)
            print(f"dpkit: {head[:12]}: the launches follow main again; push it.")
            return 0
        if not VERSION.fullmatch(args.version):
            raise ReleaseError(f"{args.version!r} is not a version: write X.Y.Z, e.g. 0.2.0.")
        ref = f"v{args.version}"
        head = release(args.version, ref, tag=True)
    except ReleaseError as error:
        print(f"dpkit release: {error}", file=sys.stderr)
        return 1
    print(f"dpkit: tagged {ref} at {head[:12]}; publish it with: git push origin HEAD {ref}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
