"""The website (make site) in headless Chromium: built here from the committed notebooks,
served on 127.0.0.1, every page opened as a reader opens it.

Every page renders without a console error and shows no check marker or install cell; the
sidebar and the next-page links reach every lesson; every internal link, image, script and
stylesheet resolves (anchors too); every figure has alt text that says what it shows; each
notebook page's Colab and Binder buttons name that notebook at the launch ref and its
download link gives the notebook; the search box finds a term of lesson 04. Screenshots of
the landing page and lesson 04 go to runs/site/. Nothing is fetched from the internet: the
one thing a page asks for from outside (MathJax, which draws the formulas) gets an empty
answer here.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

from tests.support.browser import ROOT, needs_browser

sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402
import website  # noqa: E402

try:
    import jupyter_book  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    jupyter_book = None

pytestmark = [
    *needs_browser,
    pytest.mark.skipif(
        jupyter_book is None, reason="Jupyter Book is missing: run `make test-site`"
    ),
]

SHOTS = ROOT / "runs" / "site"
LESSONS = sorted(p.stem for p in (ROOT / "lessons").glob("*.ipynb"))
EXERCISES = sorted(p.stem for p in (ROOT / "exercises").glob("*.ipynb"))
SEARCH_TERM = "MirroredStrategy"  # lesson 04's title names it


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no line per request in the test's output
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built into a temporary folder, served on a free loopback port."""
    where = tmp_path_factory.mktemp("website")
    seconds = website.build(where / "src", where / "site")
    print(f"website: built in {seconds:.1f} s")
    handler = functools.partial(Quiet, directory=str(where / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield where / "site", f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def pages_of(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.html")
        if not p.relative_to(root).as_posix().startswith(("_", "genindex", "search"))
    )


class Reader:
    """One browser tab that records console errors and answers outside requests itself."""

    EMPTY = {"script": "application/javascript", "stylesheet": "text/css"}

    def __init__(self, browser):
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else 0)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), self._outside)

    def _outside(self, route) -> None:
        self.outside.append(route.request.url)
        kind = self.EMPTY.get(route.request.resource_type, "text/plain")
        route.fulfill(status=200, content_type=kind, body="")

    def open(self, url: str) -> None:
        self.errors.clear()
        response = self.page.goto(url, wait_until="load")
        assert response and response.ok, f"{url}: HTTP {response and response.status}"

    def links(self) -> list[str]:
        return self.page.eval_on_selector_all(
            "a[href], img[src], link[href], script[src]",
            "els => els.map(e => e.href || e.src)",
        )


@pytest.fixture(scope="module")
def reader(browser):
    return Reader(browser)


def test_every_page_renders_clean(site, reader):
    root, base = site
    pages = pages_of(root)
    wanted = {f"lessons/{n}.html" for n in LESSONS} | {f"exercises/{n}.html" for n in EXERCISES}
    assert wanted <= set(pages), f"pages missing: {sorted(wanted - set(pages))}"
    assert "index.html" in pages and "SOURCES.html" in pages
    assert not any(p.startswith("solutions/") for p in pages), "the site never shows solutions"
    for page in pages:
        reader.open(base + page)
        assert not reader.errors, f"{page}: console errors {reader.errors[:3]}"
        text = reader.page.inner_text("main")
        assert "NBVAL_" not in text, f"{page} shows a check marker"
        assert "google.colab" not in text, f"{page} shows the Colab install cell"
        assert "Open in Colab" not in reader.page.inner_html("main"), f"{page} keeps the badge"
    assert set(urlparse(u).hostname for u in reader.outside) <= {"cdn.jsdelivr.net"}, (
        f"pages asked the internet for {sorted(set(reader.outside))[:5]}"
    )


def test_the_landing_page_is_readmes_lesson_table(site, reader):
    root, base = site
    reader.open(base + "index.html")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Lessons\n\n", 1)[1].split("\n\n")[0]
    rows = [line for line in table.split("\n") if re.match(r"\| \d\d \|", line)]
    shown = reader.page.locator("main table tbody tr")
    assert shown.count() == len(rows) == len(LESSONS)
    for i, row in enumerate(rows):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert shown.nth(i).locator("td").nth(0).inner_text().strip() == cells[0]
        link = shown.nth(i).locator("td").nth(1).locator("a")
        assert link.get_attribute("href") == f"lessons/{LESSONS[i]}.html"
    reader.page.screenshot(path=str(_shot("index")), full_page=False)


def test_navigation_reaches_every_lesson(site, reader):
    root, base = site
    reader.open(base + "index.html")
    sidebar = reader.page.eval_on_selector_all(
        "nav.bd-docs-nav a.reference.internal", "els => els.map(e => e.href)"
    )
    wanted = {base + f"lessons/{n}.html" for n in LESSONS}
    assert wanted <= set(sidebar), f"sidebar lacks {sorted(wanted - set(sidebar))}"
    seen = []  # now read the book in order with the next-page link, as a reader does
    while reader.page.locator("a.right-next").count():
        with reader.page.expect_navigation():
            reader.page.locator("a.right-next").first.click()
        seen.append(reader.page.url)
    assert wanted <= set(seen), f"next-page links skip {sorted(wanted - set(seen))}"


def test_internal_links_resolve(site, reader):
    root, base = site
    ids: dict[str, set[str]] = {}

    def ids_of(page: str) -> set[str]:
        if page not in ids:
            html = (root / page).read_text(encoding="utf-8")
            ids[page] = set(re.findall(r'\sid="([^"]+)"', html))
        return ids[page]

    broken = []
    for page in pages_of(root):
        reader.open(base + page)
        for link in reader.links():
            url, fragment = urldefrag(link)
            if not url.startswith(base):
                continue
            target = unquote(urlparse(url).path.lstrip("/")) or "index.html"
            if target.endswith("/"):
                target += "index.html"
            if not (root / target).is_file():
                broken.append(f"{page} -> {target}")
            elif fragment and target.endswith(".html") and unquote(fragment) not in ids_of(target):
                broken.append(f"{page} -> {target}#{fragment}")
    assert not broken, f"{len(broken)} broken links: {broken[:8]}"


def test_every_figure_has_alt_text_that_says_what_it_shows(site, reader):
    root, base = site
    figures = 0
    for name in LESSONS:
        reader.open(base + f"lessons/{name}.html")
        images = reader.page.eval_on_selector_all(
            "article.bd-article img",
            "els => els.map(e => [e.getAttribute('src'), e.getAttribute('alt')])",
        )
        for src, alt in images:
            assert alt and alt.strip() != src and len(alt.split()) >= 4, (
                f"lessons/{name}: image {src} has alt text {alt!r}"
            )
        outputs = reader.page.locator(".cell_output img")
        figures += outputs.count()
        for i in range(outputs.count()):
            alt = outputs.nth(i).get_attribute("alt")
            assert len(alt.split()) >= 8, f"lessons/{name}: figure {i} alt {alt!r}"
    stored = sum(
        sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))
        for nb in (json.loads(p.read_text()) for p in (ROOT / "lessons").glob("*.ipynb"))
    )
    assert figures == stored, f"{figures} figures on the pages, {stored} stored in lessons/"


@pytest.mark.parametrize("folder", ["lessons", "exercises"])
def test_launch_buttons_name_the_pages_own_notebook(site, reader, folder):
    root, base = site
    ref, repo = colab.ref(), colab.repository()
    for name in LESSONS if folder == "lessons" else EXERCISES:
        relpath = f"{folder}/{name}.ipynb"
        reader.open(base + f"{folder}/{name}.html")
        launches = reader.page.eval_on_selector_all(
            ".dropdown-launch-buttons a[href]", "els => els.map(e => e.href)"
        )
        hrefs = reader.page.eval_on_selector_all(
            ".dropdown-download-buttons a[href]", "els => els.map(e => e.href)"
        )
        assert sorted(launches) == sorted(
            [
                colab.badge_url(relpath),
                f"https://mybinder.org/v2/gh/{repo}/{ref}?urlpath=lab/tree/{relpath}",
            ]
        ), f"{relpath}: {launches}"
        downloads = [h for h in hrefs if h.endswith(f"_sources/{relpath}")]
        assert downloads, f"{relpath}: no download link"
        got = json.loads(reader.page.request.get(downloads[0]).text())
        stored = json.loads((ROOT / relpath).read_text())
        assert len(got["cells"]) == len(stored["cells"]), f"{relpath}: the download is not it"


def test_the_search_box_finds_a_term_of_lesson_04(site, reader):
    root, base = site
    lesson = next(n for n in LESSONS if n.startswith("04_"))
    reader.open(base + "index.html")
    reader.page.keyboard.press("Control+k")  # the theme's shortcut opens the search box
    box = reader.page.locator("input[name='q']:visible").first
    box.fill(SEARCH_TERM)
    box.press("Enter")
    reader.page.wait_for_url(re.compile(r"search\.html"))
    results = reader.page.locator("#search-results li a")
    results.first.wait_for(timeout=30_000)
    hrefs = results.evaluate_all("els => els.map(e => e.href)")
    assert any(f"lessons/{lesson}.html" in h for h in hrefs), hrefs[:10]
    assert not reader.errors, reader.errors[:3]
    reader.open(base + f"lessons/{lesson}.html")
    reader.page.screenshot(path=str(_shot(lesson)), full_page=False)


def _shot(name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}.png"
