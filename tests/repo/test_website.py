"""tools/website.py: what the site makes of README and of a notebook, without building it
(browser_tests/test_site.py builds it and reads it in Chromium)."""

import sys

import nbformat
import pytest

from tests.support.notebooks import LESSONS, ROOT, nbio
from tests.support.paths import ci_targets

sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402
import website  # noqa: E402


def test_the_landing_page_is_written_from_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = website.landing_page(readme)
    assert page.startswith(readme.split("\n", 1)[0] + "\n")
    table = readme.split("\n## Lessons\n\n", 1)[1].split("\n\n")[0]
    assert table.startswith("| # |") and table.count("\n| 0") >= 9 and table in page
    changed = readme.replace("| 00 | [Setup and devices]", "| 00 | [Setting up]")
    assert "[Setting up]" in website.landing_page(changed)  # follows README, not a copy


def test_the_student_copys_readme_with_its_banner_makes_a_landing_page_too():
    import student_copy

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = website.landing_page(student_copy.NOTE + readme)
    title, banner = page.split("\n\n")[:2]
    assert title == readme.split("\n", 1)[0]
    assert banner == student_copy.NOTE.strip()


def test_relative_links_out_of_the_book_go_to_github_at_the_ref(tmp_path):
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "00_a.ipynb").write_text("{}")
    text = "[job](../deploy/tfjob.yaml#x), [setup](00_a.ipynb), [web](https://a.b/c)"
    fixed = website.retarget(text, website.Path("lessons/01_b.ipynb"), tmp_path)
    url = f"https://github.com/{colab.repository()}/blob/{colab.ref()}/deploy/tfjob.yaml"
    assert fixed == f"[job]({url}#x), [setup](00_a.ipynb), [web](https://a.b/c)"


def test_a_link_into_solutions_stops_the_site(tmp_path):
    text = "the [answer](../solutions/01_one_device.ipynb)"
    with pytest.raises(ValueError, match="exercises/01_one_device.ipynb links to ../solutions/"):
        website.retarget(text, website.Path("exercises/01_one_device.ipynb"), tmp_path)


def test_the_repository_button_opens_the_launch_ref():
    button = {"label": "source-repository-button", "url": "https://github.com/o/n"}
    context = {"github_version": "student", "header_buttons": [{"buttons": [button]}]}
    website.repository_button_at_the_ref(None, "index", None, context, None)
    assert button["url"] == "https://github.com/o/n/tree/student"


def test_a_staged_notebook_hides_the_install_cell_badge_and_long_checks(tmp_path):
    relpath = f"lessons/{LESSONS[1].name}"
    nb = nbio.read(LESSONS[1])
    short = nbformat.v4.new_code_cell("print(1)", metadata={"tags": ["nbval-check-output"]})
    long = nbformat.v4.new_code_cell("x = 1\n" * 13, metadata={"tags": ["nbval-check-output"]})
    nb.cells += [short, long]
    staged = website.stage_notebook(nb, relpath, tmp_path)
    install = [c for c in staged.cells if colab.is_install_cell(c)]
    assert len(install) == 1 and nbio.has_tag(install[0], "remove-cell")
    assert not any(colab.BADGE.search(c.source) for c in staged.cells if c.cell_type == "markdown")
    assert not nbio.has_tag(short, "hide-input") and nbio.has_tag(long, "hide-input")
    outputs = [c.get("outputs") for c in nbio.read(LESSONS[1]).cells]
    assert [c.get("outputs") for c in staged.cells[: len(outputs)]] == outputs  # as stored


def test_the_pages_workflow_publishes_what_make_site_builds():
    import yaml

    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    build = flow["jobs"]["build"]["steps"]
    runs = [s.get("run", "") for s in build]
    assert any(r.startswith("make site") for r in runs), runs
    upload = next(s for s in build if "upload-pages-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == website.SITE.relative_to(ROOT).as_posix()
    assert flow["jobs"]["deploy"]["needs"] == "build"
    ci = ci_targets()
    assert "site" in ci and ("test-site" in ci or "test-browser" in ci), ci
