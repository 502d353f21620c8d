"""The app started as a Hugging Face Space starts it: `python app.py` with SPACE_ID set, in
a copy of the repository's files only (no `make`, no npm, no .cache/static), on the port
the app picks itself. Then a bertviz view is drawn, through the API and in Chromium.

What this does not prove: the Python environment is this project's .venv (the test
requirements are installed too), not a fresh one with only requirements.txt, and the
embedded weights come from this machine's model folder (a Space fetches them at start).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

from helpers import ARTIFACTS, REPO, screenshot, stop

TIMEOUT = 120_000


def _repository_files(dest):
    """The files a Space's git checkout holds: tracked and not-ignored files, nothing built."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@pytest.fixture(scope="module")
def space_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("space")
    _repository_files(root)
    assert (root / "app.py").is_file() and not (root / ".cache").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADIO_SERVER")}
    env.update(
        SPACE_ID="encoder-lab/space-start-test",
        PYTHONUNBUFFERED="1",
        HF_HUB_OFFLINE="1",
        # a Space installs the embedded weights at start (app.py runs fetch_embedded.py);
        # here they are the ones this machine installed, so the test needs no network
        ENCODER_LAB_MODELS_DIR=str(REPO / ".cache" / "models"),
    )
    ARTIFACTS.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    found = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if "Running on local URL:" in line:
                found.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 240
    while not found.is_set() and proc.poll() is None and time.monotonic() < deadline:
        found.wait(0.5)
    try:
        assert found.is_set(), "the app did not start:\n" + "".join(lines[-40:])
        url = re.search(r"Running on local URL:\s*(\S+)", "".join(lines)).group(1).rstrip("/") + "/"
        yield root, url
    finally:
        stop(proc)
        (ARTIFACTS / "space-start.log").write_text("".join(lines))


def test_a_space_start_serves_bertviz_and_its_scripts(space_server):
    import urllib.request

    from gradio_client import Client

    from components import vendor

    root, url = space_server
    assert not (root / ".cache" / "static").exists()  # nothing was installed from npm
    frame = Client(url, verbose=False, download_files=False).predict(
        "I sat by the river bank.", "", "minilm-l6", "head", api_name="/bertviz_view"
    )
    assert frame.startswith("<iframe"), frame[:300]  # not the "libraries missing" notice
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    assert str(root) not in page and str(REPO) not in page  # the URLs say nothing of the machine
    for name in vendor.SCRIPTS:
        with urllib.request.urlopen(f"{url}vendor/{name}.js", timeout=10) as resp:
            assert resp.read() == vendor.script(name)


def test_a_space_start_draws_bertviz_in_the_browser(space_server, browser):
    from urllib.parse import urlparse

    from playwright.sync_api import expect

    _, url = space_server
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    external = []
    page.on("request", lambda r: external.append(r.url)
            if urlparse(r.url).hostname not in ("127.0.0.1", "localhost", None) else None)
    try:
        page.goto(url)
        page.get_by_role("tab", name="Attention").click()
        expect(page.locator("#attention-status")).to_contain_text("tokens", timeout=TIMEOUT)
        page.get_by_role("button", name="Draw with bertviz", exact=True).click()
        frame = page.frame_locator("#attention-bertviz iframe")
        # the head view: d3 (served by the app) drew the example's tokens as SVG text
        expect(frame.locator("svg text", has_text="deposited").first).to_be_attached(timeout=TIMEOUT)
        screenshot(page, "space-start")
        drawn = page.locator("#attention-bertviz iframe")  # a sandboxed frame: shot on its own
        drawn.scroll_into_view_if_needed()
        drawn.screenshot(path=str(ARTIFACTS / "screenshots" / "space-start-bertviz.png"))
        assert external == []
    finally:
        context.close()
