"""Values a page keeps in the browser's storage (``gr.BrowserState``), readable by every process.

Gradio encrypts a BrowserState's value with a secret and names its storage key at random
when none is given, both drawn anew at each start: a reload after a restart, or a page whose
requests reach another replica, would read nothing back. Here the key is fixed and the
secret is shared by every process of the app: ``ENCODER_LAB_BROWSER_SECRET``, else a random
one written once to ``.cache/browser-state.secret`` (readable by its owner alone).
"""

from __future__ import annotations

import os
import secrets
from functools import lru_cache
from pathlib import Path

SECRET_FILE = Path(__file__).resolve().parents[2] / ".cache" / "browser-state.secret"


@lru_cache(maxsize=1)
def browser_secret() -> str:
    given = os.environ.get("ENCODER_LAB_BROWSER_SECRET", "").strip()
    if given:
        return given
    SECRET_FILE.parent.mkdir(parents=True, exist_ok=True)
    if not SECRET_FILE.exists():  # written aside, then linked: the first process's wins, none reads half
        part = SECRET_FILE.with_name(f".{SECRET_FILE.name}.{os.getpid()}")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(32))
        try:
            os.link(part, SECRET_FILE)
        except FileExistsError:
            pass
        part.unlink()
    return SECRET_FILE.read_text().strip()


def browser_state(default, storage_key: str):
    """A ``gr.BrowserState`` under ``storage_key`` that every process of the app reads back."""
    import gradio as gr

    return gr.BrowserState(default, storage_key=storage_key, secret=browser_secret())
