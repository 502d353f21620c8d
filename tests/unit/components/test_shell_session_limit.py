"""The per-session limit: a session with its limit of requests in the server gets a clear
error for one more, on the unqueued route and on a queue join; other sessions go on."""

from __future__ import annotations

import threading

import gradio as gr
import httpx
import pytest

from components.shell.blocks import EncoderLabBlocks
from components.shell.session_limit import SessionLimit
from helpers import free_port, wait_until

LIMIT = 2


@pytest.fixture(scope="module")
def server():
    release, inside = threading.Event(), []

    def slow(text):
        inside.append(text)
        release.wait(60)
        return text

    with EncoderLabBlocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(slow, box, out, api_name="slow_live", queue=False)
        box.change(slow, box, out, api_name="slow_queued")
    demo.session_limit = SessionLimit(LIMIT)
    demo.queue(default_concurrency_limit=8)
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/gradio_api", release, inside
    finally:
        release.set()
        demo.close()


def _run(url, session, text):
    return httpx.post(f"{url}/run/slow_live", json={"data": [text], "session_hash": session}, timeout=60)


def test_one_request_over_the_limit_is_refused_with_a_message_and_others_go_on(server):
    url, release, inside = server
    results = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, _run(url, "flooder", f"r{i}")))
               for i in range(LIMIT)]
    for t in threads:
        t.start()
    wait_until(lambda: len(inside) == LIMIT, "the first requests running")
    refused = _run(url, "flooder", "one more")  # answered at once: the first ones still run
    assert "Too many requests at once" in refused.text and f"at most {LIMIT}" in refused.text
    joined = httpx.post(f"{url}/queue/join", json={"data": ["queued"], "fn_index": 1, "session_hash": "flooder"},
                        timeout=30)
    assert joined.status_code == 503 and "Too many requests at once" in joined.text
    other = threading.Thread(target=lambda: results.__setitem__("other", _run(url, "another-page", "hi")))
    other.start()
    wait_until(lambda: len(inside) == LIMIT + 1, "another session's request running")
    release.set()
    for t in [*threads, other]:
        t.join(60)
    assert all(r.status_code == 200 and "Too many" not in r.text for r in results.values()), results
    assert len(results) == LIMIT + 1
    after = _run(url, "flooder", "later")  # under the limit again
    assert after.status_code == 200 and after.json()["data"] == ["later"]
