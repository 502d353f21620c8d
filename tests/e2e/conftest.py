"""Playwright on Debian's Chromium (never a downloaded browser)."""

from __future__ import annotations

import shutil

import pytest

from helpers import CHROMIUM_FLAGS, track_app_calls


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    assert executable, "Debian's chromium is not on the PATH: run `make setup-test`"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture()
def page(browser, app_server):
    """A fresh page on the running app that records every request leaving the machine."""
    yield from open_page(browser, app_server)


@pytest.fixture()
def page_on_own_app(browser):
    """Like ``page``, on an app server started for this test alone."""
    from helpers import running_app

    with running_app("app-server-own.log") as url:
        yield from open_page(browser, url)


def open_page(browser, url_of_app):
    """A new browser context and page on the app at ``url_of_app`` (a generator fixture body)."""
    from urllib.parse import urlparse

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.external_requests = []
    page.dialogs = []

    def on_request(request):
        url = urlparse(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname not in ("127.0.0.1", "localhost"):
            page.external_requests.append(request.url)

    def on_dialog(dialog):
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("request", on_request)
    page.on("dialog", on_dialog)
    track_app_calls(page)
    page.goto(url_of_app)
    yield page
    context.close()

