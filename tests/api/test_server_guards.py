"""Server guards on the running app: bounded request bodies, readable limits."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from components.shell.server import MAX_REQUEST_BYTES
from helpers import MLM_KEY, REPO


def _post(url: str, body: bytes, chunked: bool = False) -> tuple[int, bytes]:
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    path = u.path.rstrip("/") + "/gradio_api/call/fill_mask"
    headers = {"Content-Type": "application/json"}
    if chunked:
        conn.request("POST", path, body=iter([body[i:i + 65536] for i in range(0, len(body), 65536)]),
                     headers=headers, encode_chunked=True)
    else:
        conn.request("POST", path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


def _payload(text: str) -> bytes:
    return json.dumps({"data": [text, MLM_KEY, 3]}).encode()


def test_normal_request_is_accepted(app_server):
    status, body = _post(app_server, _payload("The [MASK] sat on the mat."))
    assert status == 200 and b"event_id" in body


@pytest.mark.parametrize("chunked", [False, True])
def test_oversized_body_is_refused_with_413(app_server, chunked):
    status, body = _post(app_server, _payload("word " * (MAX_REQUEST_BYTES // 4)), chunked=chunked)
    assert status == 413
    assert b"too large" in body


def test_text_over_the_core_limit_gets_a_readable_error(app_server):
    client = Client(app_server, verbose=False, download_files=False)
    with pytest.raises(AppError, match="limit is 20,000"):
        client.predict("x " * 50_000 + "[MASK]", MLM_KEY, 3, api_name="/fill_mask")
    # ...and the server keeps answering.
    table, *_ = client.predict("The [MASK] sat on the mat.", MLM_KEY, 3, api_name="/fill_mask")
    assert len(table["data"]) == 3


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        str(REPO / "app.py"),
        str(REPO / "weights" / "minilm-mlm" / "trained.safetensors"),
        str(REPO / ".cache" / "static" / "package.json"),  # beside the served JS, not served
        "../../../../etc/passwd",
    ],
)
def test_no_file_outside_the_apps_assets_is_served(app_server, path):
    import urllib.error
    import urllib.parse
    import urllib.request

    url = app_server + "gradio_api/file=" + urllib.parse.quote(path)
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(url, timeout=10)
    assert info.value.code in (403, 404)
