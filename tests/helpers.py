"""Constants and helpers shared by the test suites (importable, unlike conftest)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"

# The embedded MLM every fill-mask test uses (works with no network).
MLM_KEY = "splade-tiny"
ENCODER_KEY = "minilm-l6"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, timeout_s: float = 120.0, proc: subprocess.Popen | None = None,
                  poll_s: float = 0.3) -> None:
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
            time.sleep(poll_s)
    raise TimeoutError(f"{url} did not answer within {timeout_s}s")


def stop(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """End a server this test run started: politely, then for sure."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()


SCREENSHOTS = ARTIFACTS / "screenshots"


def screenshot(page, name: str) -> None:
    """Save a full-page screenshot for a person to look at (artifacts/ is git-ignored)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def fake_hub_cache(cache: os.PathLike, repo_id: str, files_from) -> None:
    """Lay out a model folder as the Hugging Face cache does (refs/main -> snapshots/<rev>)."""
    revision = "0" * 40
    repo_dir = os.path.join(cache, "models--" + repo_id.replace("/", "--"))
    snapshot = os.path.join(repo_dir, "snapshots", revision)
    os.makedirs(os.path.join(repo_dir, "refs"))
    shutil.copytree(files_from, snapshot)
    with open(os.path.join(repo_dir, "refs", "main"), "w") as fh:
        fh.write(revision)
