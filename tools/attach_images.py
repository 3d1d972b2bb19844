"""Carry each lesson picture inside its notebook, so that it shows on Colab too.

Colab (and any viewer that has only the .ipynb) cannot read ``lessons/images/`` beside a
notebook, but every viewer shows a markdown cell's *attachments*. The pictures stay files
in ``lessons/images/`` (``make screenshots`` rewrites them); this tool turns each
``![alt](images/NAME.png)`` of a lesson into ``![alt](attachment:NAME.png)`` and stores
the file's bytes in that cell. ``--check`` writes nothing and fails when an attachment
differs from its file (run it after ``make screenshots``; tests/repo/test_lesson_images.py
checks the same).
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbio  # noqa: E402

IMAGES = nbio.ROOT / "lessons" / "images"
REF = re.compile(r"(!\[[^\]]*\]\()(?:images/|attachment:)([\w.-]+\.png)(\))")


def attach(nb) -> bool:
    """Point image references at attachments holding the files' bytes; True if changed."""
    changed = False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        names = [m.group(2) for m in REF.finditer(cell.source) if (IMAGES / m.group(2)).is_file()]
        if not names:
            continue
        source = REF.sub(
            lambda m: (
                f"{m.group(1)}attachment:{m.group(2)}{m.group(3)}"
                if (IMAGES / m.group(2)).is_file()
                else m.group(0)
            ),
            cell.source,
        )
        attachments = {
            name: {"image/png": base64.b64encode((IMAGES / name).read_bytes()).decode("ascii")}
            for name in names
        }
        if source != cell.source or cell.get("attachments") != attachments:
            cell.source, cell.attachments, changed = source, attachments, True
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail if stale")
    args = parser.parse_args(argv)
    stale = []
    for path in sorted((nbio.ROOT / "lessons").glob("*.ipynb")):
        nb = nbio.read(path)
        if attach(nb):
            stale.append(path.name)
            if not args.check:
                nbio.write(nb, path)
                print(f"attached the pictures of lessons/{path.name}")
    if args.check and stale:
        print(f"pictures out of date in {', '.join(stale)}: run python tools/attach_images.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
