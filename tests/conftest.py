"""Shared fixtures: the embedded models, a launched app, paths."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"

# The embedded MLM every fill-mask test uses (works with no network).
MLM_KEY = "splade-tiny"
ENCODER_KEY = "minilm-l6"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, timeout_s: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout_s}s")


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
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
