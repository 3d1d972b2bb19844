"""Install the workbook on Colab, and stop when the session must restart first.

Every notebook's install cell runs its :func:`install` on Colab only (tools/colab.py writes
that cell; not with ``%run``, which prints an exception and lets the cell go on):

    import runpy
    runpy.run_path("/content/dpkit/tools/colab_install.py")["install"]("/content/dpkit")

It installs the project in that folder with ``%pip`` (into the kernel's own environment),
then compares every installed distribution's version with what was there before. Colab's
runtime already holds most of what dpkit needs; pip may still install a newer version of a
package the session has imported (NumPy, protobuf): the running kernel keeps the old one in
memory, and mixing the two fails obscurely later. In that case this script raises
:class:`RestartNeeded`, naming each package, so "Run all" stops at this cell, and says
what to do: restart the session and run the notebook again (the second run finds the
project installed and does nothing). When the project already imports, nothing is
installed.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import re
import subprocess
import sys
from pathlib import Path


class RestartNeeded(RuntimeError):
    """pip replaced a package this session has imported: restart, then run again."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed() -> dict[str, str]:
    """{distribution: version} of everything importable now."""
    return {_canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}


def imported() -> set[str]:
    """Distributions that provide a module this process has imported."""
    providers = metadata.packages_distributions()
    loaded = {name.split(".")[0] for name in list(sys.modules)}
    return {_canonical(d) for top in loaded for d in providers.get(top, [])}


def project_name(folder: Path) -> str:
    """The ``[project] name`` of ``folder``'s pyproject.toml."""
    text = (folder / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^\[project\][^\[]*?^name\s*=\s*"([^"]+)"', text, re.MULTILINE | re.DOTALL)
    if not found:
        raise ValueError(f"{folder}/pyproject.toml has no [project] name")
    return found.group(1)


def _pip(folder: Path) -> None:
    shell = _ipython()
    if shell is not None:
        shell.run_line_magic("pip", f"install -q {folder}")
    else:  # outside IPython (python tools/colab_install.py): the same pip, in this Python
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", str(folder)], check=True)


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def install(folder: str | Path) -> list[str]:
    """Install the project in ``folder`` unless it imports; return what pip changed.

    Raises :class:`RestartNeeded` when pip replaced a package this session had imported.
    """
    folder = Path(folder)
    name = project_name(folder)
    module = name.replace("-", "_")
    if importlib.util.find_spec(module) is not None:
        print(f"{name} is installed already: nothing to do")
        return []
    before, loaded = installed(), imported()
    _pip(folder)
    importlib.invalidate_caches()
    if importlib.util.find_spec(module) is None:  # %pip reports a failure but does not raise
        raise RuntimeError(
            f"pip could not install {name} from {folder}: its output above says why "
            "(no network? run this cell again)"
        )
    after = installed()
    changed = sorted(n for n in after if before.get(n) != after[n] and n != _canonical(name))
    replaced = [n for n in changed if n in before and n in loaded]
    if replaced:
        listing = ", ".join(f"{n} {before[n]} -> {after[n]}" for n in replaced)
        raise RestartNeeded(
            f"pip replaced {listing}, which this session had already imported. Restart the "
            "session (Runtime > Restart session), then run this notebook again from the top: "
            f"this cell will find {name} installed and go on."
        )
    added = ", ".join(f"{n} {after[n]}" for n in changed) or "nothing else"
    print(f"installed {name}; pip also installed or upgraded: {added}")
    return changed


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: colab_install.py PROJECT_FOLDER", file=sys.stderr)
        return 2
    install(Path(argv[0]))
    return 0


if __name__ == "__main__":
    # Under %run, __name__ is "__main__" too: a RestartNeeded stops the cell as it should.
    code = main(sys.argv[1:])
    if code:
        sys.exit(code)
