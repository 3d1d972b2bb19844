"""The one headless Chromium the browser tests share (one per test module)."""

import pytest

from tests.support.browser import chromium_path, sync_playwright


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        yield chromium
        chromium.close()
