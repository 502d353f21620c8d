"""Shared fixtures: the embedded models, a launched app, paths."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from helpers import ARTIFACTS, ENCODER_KEY, MLM_KEY, REPO, free_port, stop, wait_for_http


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


@pytest.fixture(scope="session")
def app_server():
    """`python app.py` started as a user would, on a free port; yields its URL."""
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "app-server.log", "w")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port), "--host", "127.0.0.1"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for_http(url, proc=proc)
        print(f"app.py answered after {time.monotonic() - started:.1f}s")
        yield url
    finally:
        stop(proc)
        log.close()
