"""Shared fixtures: the Hub mode, the embedded models, a launched app, paths.

The Hub mode is decided here, not by the machine: unless ``ENCODER_LAB_TEST_HUB=1`` is
set, the suite runs with ``HF_HUB_OFFLINE=1`` and an empty Hugging Face cache of its own,
so no test downloads and every Hub model is unavailable, the same offline, online and on
a machine whose cache already holds some. With ``ENCODER_LAB_TEST_HUB=1`` the machine's
own Hub settings and cache are used, and the tests about an unavailable Hub model skip
(with the reason) for the models that can run. This runs when pytest imports this file,
before any test module imports ``huggingface_hub`` (which reads both variables once).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time

import pytest

from helpers import ARTIFACTS, ENCODER_KEY, MLM_KEY, REPO, hub_opted_in, stop, wait_for_http
from zoo_setup import ensure_test_zoo

if not hub_opted_in():
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="encoder-lab-empty-hub-")


def pytest_configure(config):
    """Before any test module imports ``models``: a complete mini zoo to test against."""
    ensure_test_zoo()


def pytest_report_header(config):
    if hub_opted_in():
        return "Hugging Face Hub: this machine's settings and cache (ENCODER_LAB_TEST_HUB=1)"
    return "Hugging Face Hub: offline, empty cache (set ENCODER_LAB_TEST_HUB=1 to use the Hub)"


@pytest.fixture(scope="session")
def mlm_key() -> str:
    return MLM_KEY


@pytest.fixture(scope="session")
def encoder_key() -> str:
    return ENCODER_KEY


@pytest.fixture(scope="session")
def mlm_loaded():
    """The embedded MLM, loaded once per session."""
    from models import load_model

    return load_model(MLM_KEY, head="mlm")


_LOCAL_URL = re.compile(r"Running on local URL:\s*(http://\S+?:\d+)/?")


@pytest.fixture(scope="session")
def app_server():
    """`python app.py` started as a user would; yields its URL.

    No port is chosen here: the app binds the first free one itself (Gradio tries 7860,
    7861, ... and keeps the one its server could bind) and says which in its log, so no
    other process can take the port between a choice and the bind.
    """
    env = {k: v for k, v in os.environ.items() if k != "GRADIO_SERVER_PORT"}
    env["PYTHONUNBUFFERED"] = "1"
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / "app-server.log"
    log = open(log_path, "w")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "app.py", "--host", "127.0.0.1"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = _bound_url(log_path, proc) + "/"
        wait_for_http(url, proc=proc)
        print(f"app.py answered on {url} after {time.monotonic() - started:.1f}s")
        yield url
    finally:
        stop(proc)
        log.close()


def _bound_url(log_path, proc: subprocess.Popen, timeout_s: float = 180.0) -> str:
    """The URL the app printed once its server was bound (it prints it after binding)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = _LOCAL_URL.search(log_path.read_text(errors="replace"))
        if found:
            return found.group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited with code {proc.returncode}; see {log_path}")
        time.sleep(0.2)
    raise TimeoutError(f"app.py printed no local URL within {timeout_s:.0f}s; see {log_path}")
