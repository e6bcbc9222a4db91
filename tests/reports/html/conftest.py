"""A headless chromium for this package's tests, and a page per test that fails the test on
any script error, console error or request that leaves the file system.

The browser lives for the package, not the session: Playwright's sync API keeps an event loop
marked running on the main thread, where the other packages' tests call ``asyncio.run``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Route, sync_playwright

from tests.reports.html.pages import CHROMIUM, NO_CHROMIUM


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    problems: list[str] = []

    def offline(route: Route) -> None:
        # A report is self-contained: anything but the file itself is a defect.
        problems.append(f"request to {route.request.url}")
        route.abort()

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(f"console error: {message.text}")

    context.route(lambda url: not url.startswith("file://"), offline)
    opened = context.new_page()
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on("console", console)
    yield opened
    context.close()
    assert problems == [], "the report page misbehaved"
