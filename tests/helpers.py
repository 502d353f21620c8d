"""Constants and helpers shared by the test suites (importable, unlike conftest)."""

from __future__ import annotations

from contextlib import contextmanager

import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"

# The embedded MLM every fill-mask test uses (works with no network).
MLM_KEY = "splade-tiny"
ENCODER_KEY = "minilm-l6"

# Set to 1 to run the suite against this machine's Hub settings and cache (see conftest).
HUB_OPT_IN = "ENCODER_LAB_TEST_HUB"

# Debian's Chromium, headless, with every host but this machine unreachable (a view that
# needs a CDN stays blank here): the browser tests (tests/e2e/conftest.py) and the benches
# that drive a page (bench.attention_view, bench.first_visit) launch it with these.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def hub_opted_in() -> bool:
    return os.environ.get(HUB_OPT_IN, "").strip() == "1"


def skip_if_available(*keys: str) -> None:
    """Skip a test about unavailable Hub models when one of ``keys`` can run here.

    Only with ENCODER_LAB_TEST_HUB=1: otherwise the suite's empty offline cache makes every
    Hub model unavailable, so these tests always run.
    """
    import pytest

    from models import list_models

    runnable = [m.key for m in list_models() if m.key in keys and m.available]
    if runnable:
        pytest.skip(f"{', '.join(runnable)} can run here ({HUB_OPT_IN}=1): the test needs it unavailable")


def wait_until(condition, what: str, timeout_s: float = 120.0, poll_s: float = 0.05):
    """Poll ``condition()`` until it returns something truthy (returned); fail after ``timeout_s``.

    The timeout only bounds a hang: no test asserts on how long anything took.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f}s for {what}")
        time.sleep(poll_s)


def parity_atol(float32: float = 1e-5, half: float = 2e-2) -> float:
    """The absolute tolerance for our result against a reference, for the dtype models run in
    here: float32 on the CPU; float16 on a GPU (about three significant digits per value)."""
    import torch

    from models import get_device
    from models.runtime.loading import dtype_for

    return float32 if dtype_for(get_device()) == torch.float32 else half


@functools.lru_cache(maxsize=None)
def zoo_reference(key: str, head: str = "base"):
    """(tokenizer, model) of a mini-zoo family loaded again, apart from the app: transformers'
    Auto classes on its folder, eager attention, float32, on the CPU, eval mode. head "mlm":
    ``AutoModelForMaskedLM`` (ELECTRA's generator, as fill-mask uses), "base": ``AutoModel``.
    The reference the user-path tests compare the app's answers with (loaded once a session)."""
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    from models import get_spec
    from models.registry.zoo_entries import zoo_folder

    folder = zoo_folder(key)
    kwargs = {"attn_implementation": "eager", "dtype": torch.float32}
    if head == "mlm":
        sub = get_spec(key).mlm_subfolder
        model = AutoModelForMaskedLM.from_pretrained(folder / sub if sub else folder, **kwargs)
    else:
        model = AutoModel.from_pretrained(folder, **kwargs)
    return AutoTokenizer.from_pretrained(folder), model.eval()


def zoo_encode(key: str, text: str, pair: str | None = None) -> dict:
    """A text (or pair) as the mini zoo's family reads it, for its ``zoo_reference`` model: the
    tokenizer's ids and attention mask, and segment ids 0 / 1 where the model has a segment
    table of two rows or more (what the zoo trained its pair heads with), whatever inputs the
    saved tokenizer lists. PyTorch tensors, a batch of one."""
    tok, model = zoo_reference(key)
    segments = int(getattr(model.config, "type_vocab_size", 0) or 0) > 1
    enc = tok(text, pair, return_tensors="pt", return_token_type_ids=segments)
    return {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask") or (segments and k == "token_type_ids")}


def spy_onednn(monkeypatch) -> list[tuple[str, int, tuple[int, ...]]]:
    """Record every call of the oneDNN path's ops (models/runtime/onednn.py): (op, thread, input
    shape), op one of "linear", "linear+gelu", "linear+add". The ops still run."""
    import threading

    import models.runtime.onednn as onednn

    seen: list[tuple[str, int, tuple[int, ...]]] = []
    for name, attr in (("linear", "_linear_op"), ("linear+gelu", "_linear_gelu_op"), ("linear+add", "_linear_add_op")):
        real = getattr(onednn, attr)

        def spy(x, *args, _real=real, _name=name):
            seen.append((_name, threading.get_ident(), tuple(x.shape)))
            return _real(x, *args)

        monkeypatch.setattr(onednn, attr, spy)
    return seen


# --- what the README and docstrings promise to accept, for the property tests (not read from
# the code): a text is valid when it has something besides whitespace, at most 20,000
# characters and no lone surrogate; masks are [MASK] or <mask> in any case.

MAX_CHARS = 20_000
MASKS = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)


def valid_text(text) -> bool:
    """A string with something besides whitespace, at most 20,000 characters, no lone surrogate."""
    return (isinstance(text, str) and text.strip() != "" and len(text) <= MAX_CHARS
            and not any("\ud800" <= c <= "\udfff" for c in text))


def masks_in(text: str) -> int:
    return len(MASKS.findall(text))


def half_valid(valid: dict, anything: dict):
    """A hypothesis strategy of keyword arguments, drawn half the time from values the rules
    accept and half from anything: so a good share of a few examples is valid and needs a result."""
    from hypothesis import strategies as st

    return st.one_of(st.fixed_dictionaries(valid), st.fixed_dictionaries(anything))


def plotly_array(value):
    """A Plotly array from a figure's JSON, as NumPy: a list, or the typed-array form
    {dtype, bdata, shape} Plotly uses for NumPy data."""
    import base64

    import numpy as np

    if isinstance(value, dict):
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return data.reshape([int(n) for n in str(value.get("shape", len(data))).split(",")])
    return np.array(value, dtype=float)


def free_port() -> int:
    """A port free now (for bench/ only: the tests let the app bind its own port)."""
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


def sections_of(tab: str) -> list[str]:
    """The sub-tabs of the tab ``tab`` (its label), in order; [] for a tab without any."""
    from components.attention import copy as attention
    from components.compare import copy as compare
    from components.embeddings import copy as embeddings
    from components.inside import copy as inside
    from components.masking import copy as masking
    from components.parts import copy as parts

    return {
        "Masking lab": [masking.SECTION_CORRUPT, masking.SECTION_LOSS, masking.SECTION_STATS, masking.SECTION_PAIR,
                        masking.SECTION_RTD],
        "Attention": [attention.SECTION_HEATMAPS, attention.SECTION_BERTVIZ, attention.SECTION_INPUT],
        inside.TAB_LABEL: [inside.SECTION_STEPS, inside.SECTION_GRADIENTS],
        parts.TAB_LABEL: [parts.SECTION_KNOCKOUT, parts.SECTION_IMPORTANCE, parts.SECTION_LENS, parts.SECTION_TRACE],
        "Embeddings": [embeddings.SECTION_POOLING, embeddings.SECTION_WORD],
        "Compare": [compare.SECTION_SAME_INPUT, compare.SECTION_KNOWLEDGE, compare.SECTION_ARCHITECTURES,
                    compare.SECTION_SPEED, compare.SECTION_ZOO],
    }.get(tab, [])


def page_tab(page):
    """The selected one of the page's tabs (its top row: a tab's own sections come after it)."""
    return page.locator('[role="tab"][aria-selected="true"]').first


def open_section(page, name: str) -> None:
    """Click the sub-tab ``name`` of the tab on screen (a tab's further sections, drawn only
    once opened)."""
    page.get_by_role("tab", name=name, exact=True).click()


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


# --- waiting for the app's answers (an event, not a guessed sleep) -------------------------

APP_CALLS = ("/gradio_api/queue/", "/gradio_api/run/", "/gradio_api/call/")


def track_app_calls(page) -> None:
    """Count the page's requests to the app's queue: each action's join, and the stream
    its answers come back on (which ends once the session has nothing pending)."""
    page.open_calls = set()

    def started(request):
        if any(part in request.url for part in APP_CALLS):
            page.open_calls.add(request)

    def ended(request):
        page.open_calls.discard(request)

    page.on("request", started)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)


def _waiting_trackers(page) -> int:
    """Components whose status tracker still shows work under way. A tracker that shows
    "Error" has had its answer (the error) and stays shown until the next one: not waiting."""
    return page.locator('[data-testid="status-tracker"]:not(.hide)').evaluate_all(
        "els => els.filter(e => !/^Error\\b/.test(e.innerText.trim())).length")


def settle(page, timeout_s: float = 300.0) -> None:
    """Wait until every action taken so far has been answered and drawn.

    Two painted frames let the page's handlers send their requests (and Playwright report
    them); settled when, after that, none of the app's calls is still open.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        if not page.open_calls:
            return
        if all("/queue/data" in call.url for call in page.open_calls) and not _waiting_trackers(page):
            # only answer streams are open and no component waits: Gradio's client may close a
            # stream it no longer needs without Playwright ever reporting that request ended
            return
        if time.monotonic() > deadline:
            waiting = page.locator('[data-testid="status-tracker"]:not(.hide)').evaluate_all(
                "els => els.map(e => (e.closest('[id]') || e).id + ': ' + e.innerText.trim().slice(0, 80))")
            raise TimeoutError(f"the app's answers did not all arrive within {timeout_s:.0f}s; still open: "
                               f"{sorted(call.url for call in page.open_calls)}; still waiting: {waiting}")
        page.wait_for_timeout(100)  # lets Playwright deliver the request events meanwhile


_LOCAL_URL = re.compile(r"Running on local URL:\s*(http://\S+?:\d+)/?")


@contextmanager
def running_app(log_name: str = "app-server.log"):
    """`python app.py` started as a user would; yields its URL, stops it afterwards.

    No port is chosen here: the app binds the first free one itself (Gradio tries 7860,
    7861, ... and keeps the one its server could bind) and says which in its log, so no
    other process can take the port between a choice and the bind.
    """
    env = {k: v for k, v in os.environ.items() if k != "GRADIO_SERVER_PORT"}
    env["PYTHONUNBUFFERED"] = "1"
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / log_name
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

# Browser tests' deadlines (milliseconds), in one place: a view answered from warm caches,
# and one whose first request loads a model or computes a default view.
TIMEOUT = 60_000
SLOW_TIMEOUT = 120_000


def passage_slice(folder: Path, keep) -> tuple[list[str], list[str], "object"]:
    """(passages, sources, a MonkeyPatch pointing the search at them): the lines of the passage
    index ``data/passages.txt`` for which ``keep(line number, text)`` holds, written to ``folder``
    with their sources, the search's caches emptied; ``patch.undo()`` restores the whole index."""
    import pytest

    from models.embeddings import retrieval

    lines = (REPO / "data" / "passages.txt").read_text(encoding="utf-8").splitlines()
    sources = (REPO / "data" / "passages_sources.txt").read_text(encoding="utf-8").splitlines()
    kept = [i for i, text in enumerate(lines) if keep(i, text)]
    (folder / "passages.txt").write_text("".join(lines[i] + "\n" for i in kept), encoding="utf-8")
    (folder / "sources.txt").write_text("".join(sources[i] + "\n" for i in kept), encoding="utf-8")
    patch = pytest.MonkeyPatch()
    patch.setattr(retrieval, "CORPUS_FILE", folder / "passages.txt")
    patch.setattr(retrieval, "SOURCES_FILE", folder / "sources.txt")
    patch.setattr(retrieval, "CACHE_DIR", folder / "cache")
    patch.setattr(retrieval, "_LOADED", {})
    patch.setattr(retrieval, "_RAW", {})
    return [lines[i] for i in kept], [sources[i] for i in kept], patch
