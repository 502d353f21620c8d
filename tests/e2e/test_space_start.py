"""The app started as a Hugging Face Space starts it: `python app.py` with SPACE_ID set, in
a copy of the repository's files only (no `make`, no npm, no .cache/static), on the port
the app picks itself, in a Python environment that holds requirements.txt and nothing else.
Then a bertviz view is drawn, through the API and in Chromium.

The environment: a new venv whose site-packages holds the distributions pip installs for
requirements.txt (its pins and their dependencies, markers and extras followed), linked
file by file from this project's .venv (what their RECORDs list), so that no network is
needed; the test-only packages (pytest, playwright, hypothesis, ...) are absent, and a
check proves it. What this does not prove: pip's resolution itself (the versions are the
ones the .venv resolved), and the embedded weights come from this machine's model folder
(a Space fetches them at start).
"""

from __future__ import annotations

import html
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from helpers import ARTIFACTS, REPO, SLOW_TIMEOUT, open_section, screenshot, stop


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


def _requirement_closure(requirements) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions pip puts in for a requirements file: its lines and, through
    each distribution's metadata, their dependencies (markers evaluated, extras followed)."""
    todo = []
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            todo.append((req.name, frozenset(req.extras)))
    found: dict[str, tuple[importlib.metadata.Distribution, frozenset]] = {}
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in found:
            if extras <= found[key][1]:
                continue
            extras |= found[key][1]
        dist = importlib.metadata.distribution(name)
        found[key] = (dist, extras)
        for spec in dist.requires or []:
            req = Requirement(spec)
            wanted = sorted(extras) or [""]
            if req.marker is None or any(req.marker.evaluate({"extra": extra}) for extra in wanted):
                todo.append((req.name, frozenset(req.extras)))
    return {key: dist for key, (dist, _) in found.items()}


def _requirements_only_python(dest):
    """A venv holding requirements.txt's distributions only (see the module's docstring)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    for dist in _requirement_closure(REPO / "requirements.txt").values():
        files = dist.files
        assert files, f"{dist.metadata['Name']} lists no files"
        for name in files:
            if name.parts[0] == "..":  # console scripts beside the interpreter: not needed
                continue
            source = dist.locate_file(name)
            target = os.path.join(site, name)
            if os.path.isfile(source) and not os.path.lexists(target):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(source, target)
    return python


def _clean_env() -> dict[str, str]:
    """This process's environment without what would point Python at the project's .venv."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("GRADIO_SERVER") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}


@pytest.fixture(scope="module")
def space_python(tmp_path_factory):
    python = _requirements_only_python(tmp_path_factory.mktemp("space-venv") / "venv")
    for module, present in (("gradio", True), ("torch", True), ("pytest", False), ("playwright", False),
                            ("hypothesis", False)):
        probe = subprocess.run([str(python), "-c", f"import {module}"], env=_clean_env(),
                               capture_output=True, text=True)
        if present:
            assert probe.returncode == 0, probe.stderr
        else:
            assert "ModuleNotFoundError" in probe.stderr, f"the test-only {module} is in the Space's environment"
    return python


@pytest.fixture(scope="module")
def space_server(tmp_path_factory, space_python):
    root = tmp_path_factory.mktemp("space")
    _repository_files(root)
    assert (root / "app.py").is_file() and not (root / ".cache").exists()
    env = _clean_env()
    env.update(
        SPACE_ID="encoder-lab/space-start-test",
        PYTHONUNBUFFERED="1",
        HF_HUB_OFFLINE="1",
        # a Space installs the embedded weights at start (app.py runs fetch_embedded.py);
        # here they are the ones this machine installed, so the test needs no network
        ENCODER_LAB_MODELS_DIR=str(REPO / ".cache" / "models"),
    )
    ARTIFACTS.mkdir(exist_ok=True)
    proc = subprocess.Popen([str(space_python), "app.py"], cwd=root, env=env,
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

    from components.shell import vendor

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
        expect(page.locator("#attention-status")).to_contain_text("tokens", timeout=SLOW_TIMEOUT)
        open_section(page, "bertviz")
        page.get_by_role("button", name="Draw with bertviz", exact=True).click()
        frame = page.frame_locator("#attention-bertviz iframe")
        # the head view: d3 (served by the app) drew the example's tokens as SVG text
        expect(frame.locator("svg text", has_text="deposited").first).to_be_attached(timeout=SLOW_TIMEOUT)
        screenshot(page, "space-start")
        drawn = page.locator("#attention-bertviz iframe")  # a sandboxed frame: shot on its own
        drawn.scroll_into_view_if_needed()
        drawn.screenshot(path=str(ARTIFACTS / "screenshots" / "space-start-bertviz.png"))
        assert external == []
    finally:
        context.close()
