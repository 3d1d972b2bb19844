"""The one headless Chromium the browser tests share (one per test module)."""

import pytest
from test_lab_browser import _chromium, sync_playwright


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        yield chromium
        chromium.close()
