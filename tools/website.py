"""The workbook as a website: `make site` builds it offline into site/ with Jupyter Book 1.x.

Built from the committed notebooks, nothing executed (the lessons carry their outputs). The
pages: a landing page written from README.md (its opening and its lesson table), every
lesson, every exercise (never solutions/), and SOURCES.md. The book's source is staged in
runs/site-src/ (git ignores runs/), the HTML is copied to site/ (git ignores it too):

* each notebook as committed, except that the Colab install cell (tag ``colab-install``) gets
  ``remove-cell`` and the Open-in-Colab badge line goes (every page has launch buttons
  instead); a checked cell (tag ``nbval-check-output``) or exercise check (tag ``check``)
  longer than LONG_CHECK lines gets ``hide-input`` (collapsed behind a toggle, output shown);
* a relative link to a file the book does not hold (README.md, deploy/, dpkit/) points to
  that file on GitHub at the launch ref; a link into solutions/ stops the build (no page
  leads a student to a solution: an exercise names its source without linking to it);
* _config.yml and _toc.yml, with the repository and the ref from tools/colab.py (pyproject's
  [project.urls] Repository and [tool.dpkit.launch] ref), so the Colab and Binder buttons
  and the notebook download follow the same ref as the notebooks' badges and install cell.

This module is also the book's one Sphinx extension (``setup``): myst-nb reads only width and
height from an image output's metadata, so the extension passes on the ``alt`` text that
dpkit.views.figures stores there to the ``<img>``; and the theme's Repository button, which
opens the repository's default branch, opens the launch ref instead (a student copy's site
would otherwise lead to the branch that holds the solutions).

    python tools/website.py            # stage, build, copy to site/
    python tools/website.py --stage    # only write runs/site-src/ (for a look at the source)
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import colab  # noqa: E402
import nbio  # noqa: E402

ROOT = nbio.ROOT
STAGE = ROOT / "runs" / "site-src"
SITE = ROOT / "site"
FOLDERS = ("lessons", "exercises")  # the notebooks the site shows; solutions/ never
LONG_CHECK = 12  # a check cell with more source lines than this is collapsed
CHECK_TAGS = ("nbval-check-output", "check")
TITLE = "dpkit: data-parallel training in TensorFlow 2"
LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")


def landing_page(readme: str) -> str:
    """index.md: README's title and opening paragraphs, then its lesson table (as README has
    them: edit README, not this page). A quoted banner above the title (the student copy's,
    tools/student_copy.py) goes under the title."""
    lines = readme.split("\n")
    banner = []
    while lines and (lines[0].startswith(">") or (banner and not lines[0].strip())):
        banner.append(lines.pop(0))
    readme = "\n".join(lines)
    title, rest = readme.split("\n", 1)
    opening = rest.split("\n## ", 1)[0].strip()
    lessons = re.search(r"^## Lessons\n\n(\|.*?)\n\n", readme, re.MULTILINE | re.DOTALL)
    if not title.startswith("# ") or not lessons:
        raise ValueError("README.md must open with a '# ' title and have a '## Lessons' table")
    return "\n\n".join(
        [
            title,
            *(["\n".join(banner).strip()] if banner else []),
            opening,
            "Every page below is a notebook with its stored outputs: read it here, or open it "
            "with the buttons at the top of the page in Colab or Binder, or download it.",
            "## Lessons",
            lessons.group(1),
            "[Where the lessons come from](SOURCES.md): the tutorials this workbook is built "
            "from, what each teaches and what each gets wrong.",
        ]
    )


def retarget(text: str, here: Path, book: Path = STAGE) -> str:
    """Relative links (in a page at ``here`` in ``book``) to files outside the book point to
    GitHub at the launch ref."""

    def fix(match):
        target = match.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("/"):
            return match.group(0)
        resolved = (book / here.parent / target).resolve()
        if resolved.exists():
            return match.group(0)
        source = (ROOT / here.parent / target).resolve()
        try:
            relpath = source.relative_to(ROOT).as_posix()
        except ValueError:
            return match.group(0)
        if relpath.split("/")[0] == "solutions":
            raise ValueError(
                f"{here} links to {target}: no page of the site may lead to a solution "
                "(name it as text instead)"
            )
        url = f"https://github.com/{colab.repository()}/blob/{colab.ref()}/{relpath}"
        return f"{match.group(1)}{url}{match.group(3)}"

    return LINK.sub(fix, text)


def add_tag(cell, tag: str) -> None:
    tags = cell.metadata.setdefault("tags", [])
    if tag not in tags:
        tags.append(tag)


def _attachments_as_files(cell, relpath: str, out: Path) -> None:
    """myst-nb does not draw ``attachment:NAME`` images: write each beside the notebook."""
    for name, data in cell.pop("attachments", {}).items():
        mime, encoded = next(iter(data.items()))
        target = f"_attachments/{Path(relpath).stem}-{name}"
        (out / Path(relpath).parent / target).parent.mkdir(parents=True, exist_ok=True)
        (out / Path(relpath).parent / target).write_bytes(base64.b64decode(encoded))
        cell.source = nbio.code_source(cell).replace(f"attachment:{name}", target)


def stage_notebook(nb, relpath: str, out: Path = STAGE):
    """The notebook as the site shows it (in place; see the module's docstring)."""
    for cell in nb.cells:
        if colab.is_install_cell(cell) or nbio.has_tag(cell, colab.INSTALL_TAG):
            add_tag(cell, "remove-cell")
        elif cell.cell_type == "code" and any(nbio.has_tag(cell, t) for t in CHECK_TAGS):
            if len(nbio.code_source(cell).strip().split("\n")) > LONG_CHECK:
                add_tag(cell, "hide-input")
        elif cell.cell_type == "markdown":
            _attachments_as_files(cell, relpath, out)
            lines = nbio.code_source(cell).split("\n")
            lines = [line for line in lines if not colab.BADGE.fullmatch(line.strip())]
            cell.source = retarget("\n".join(lines), Path(relpath), out)
    return nb


def config() -> str:
    repo = f"https://github.com/{colab.repository()}"
    settings = {
        "title": TITLE,
        "author": "the dpkit authors",
        "copyright": "the dpkit authors",
        "only_build_toc_files": True,
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
        "execute": {"execute_notebooks": "off"},  # the committed outputs, nothing run
        "repository": {"url": repo, "branch": colab.ref(), "path_to_book": ""},
        "launch_buttons": {
            "notebook_interface": "jupyterlab",
            "binderhub_url": "https://mybinder.org",
            "colab_url": "https://colab.research.google.com",
        },
        "html": {
            "use_repository_button": True,
            "use_issues_button": False,
            "use_edit_page_button": False,
            "home_page_in_navbar": True,
        },
        "sphinx": {
            "local_extensions": {"website": str(Path(__file__).resolve().parent)},
            "config": {
                "html_show_sourcelink": True,
                "nb_merge_streams": True,
                # a first visit has no stored colour mode: without a default the theme logs
                # "Got invalid theme mode" as a console error
                "html_context": {"default_mode": "light"},
            },
        },
    }
    return json.dumps(settings, indent=2) + "\n"  # JSON is YAML


def toc(lessons: list[str], exercises: list[str]) -> str:
    def chapters(files):
        return [{"file": f} for f in files]

    book = {
        "format": "jb-book",
        "root": "index",
        "parts": [
            {"caption": "Lessons", "chapters": chapters(lessons)},
            {"caption": "Exercises", "chapters": chapters(exercises)},
            {"caption": "About", "chapters": [{"file": "SOURCES"}]},
        ],
    }
    return json.dumps(book, indent=2) + "\n"


def stage(out: Path = STAGE) -> dict[str, list[str]]:
    """Write the book's source to ``out``; returns {folder: [page paths without suffix]}."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    pages: dict[str, list[str]] = {}
    for folder in FOLDERS:
        (out / folder).mkdir()
        pages[folder] = []
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            relpath = f"{folder}/{path.name}"
            nbio.write(stage_notebook(nbio.read(path), relpath, out), out / relpath)
            pages[folder].append(relpath[: -len(".ipynb")])
    shutil.copytree(ROOT / "lessons" / "images", out / "lessons" / "images")
    shutil.copy(ROOT / "SOURCES.md", out / "SOURCES.md")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (out / "index.md").write_text(retarget(landing_page(readme), Path("index.md"), out))
    sources = (out / "SOURCES.md").read_text(encoding="utf-8")
    (out / "SOURCES.md").write_text(retarget(sources, Path("SOURCES.md"), out))
    (out / "_config.yml").write_text(config())
    (out / "_toc.yml").write_text(toc(pages["lessons"], pages["exercises"]))
    return pages


def build(source: Path = STAGE, site: Path = SITE) -> float:
    """Stage into ``source``, build with Jupyter Book (offline: nothing is fetched), copy the
    HTML to ``site``; returns the seconds it took."""
    start = time.monotonic()
    stage(source)
    jb = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()"]
    command = [*jb, "build", str(source), "--builder", "html", "--keep-going", "--warningiserror"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-6000:], done.stderr[-3000:], sep="\n")
        raise SystemExit(f"website: jupyter-book build failed (exit {done.returncode})")
    if site.exists():
        shutil.rmtree(site)
    shutil.copytree(source / "_build" / "html", site)
    (site / ".nojekyll").touch()  # GitHub Pages: serve _static/ and _images/ as they are
    return time.monotonic() - start


# --- the Sphinx extension --------------------------------------------------------------------


def _render_image_with_alt(original):
    def render_image(self, data):
        nodes = original(self, data)
        alt = data.output_metadata.get(data.mime_type, {}).get("alt")
        for node in nodes:
            if alt:
                node["alt"] = alt
        return nodes

    render_image.dpkit_alt = True
    return render_image


def _one_of_each_script(app, pagename, templatename, context, doctree) -> None:
    """sphinx-thebe's inline set-up script is added twice to each page (Jupyter Book 1.0.4,
    sphinx-thebe 0.3.1); the second copy throws "Identifier 'THEBE_JS_URL' has already been
    declared" in the console. Keep the first of equal scripts."""
    seen, kept = set(), []
    for script in context.get("script_files", []):
        attributes = sorted(getattr(script, "attributes", {}).items())
        # not the priority; a body-only script is filed under None or "" (the two copies differ)
        key = (str(getattr(script, "filename", script) or ""), repr(attributes))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def repository_button_at_the_ref(app, pagename, templatename, context, doctree) -> None:
    """The theme's Repository button links to the repository's root, which shows its default
    branch; link to the tree of the ref the book was built for (``github_version``)."""
    ref = context.get("github_version")
    groups = list(context.get("header_buttons", []))
    while groups and ref:
        button = groups.pop()
        groups += button.get("buttons", [])
        if button.get("label") == "source-repository-button":
            button["url"] = f"{button['url'].rstrip('/')}/tree/{ref}"


def setup(app):
    """Sphinx: image outputs get the alt text stored in their metadata; no script twice; the
    Repository button opens the launch ref."""
    from myst_nb.core.render import NbElementRenderer

    if not getattr(NbElementRenderer.render_image, "dpkit_alt", False):
        NbElementRenderer.render_image = _render_image_with_alt(NbElementRenderer.render_image)
    app.connect("html-page-context", _one_of_each_script, priority=900)
    app.connect("html-page-context", repository_button_at_the_ref, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", action="store_true", help="only write runs/site-src/")
    args = parser.parse_args(argv)
    if args.stage:
        pages = stage()
        print(f"website: staged {sum(map(len, pages.values()))} notebooks in {STAGE}")
        return 0
    seconds = build()
    pages = len(list(SITE.rglob("*.html")))
    print(f"website: built {pages} HTML pages into site/ in {seconds:.0f} s (open site/index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
