"""Every endpoint answers a missing or type-invalid input with a readable message.

Gradio rejects such inputs before any handler runs and, unless told otherwise, answers
``{"error": null}``: gradio_client then says only that the app "has not enabled verbose
error reporting". These tests send what no UI control can (null, a string for a number,
too few values) to every named endpoint, and read the message the caller gets.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from gradio_client.exceptions import AppError

from helpers import ARTIFACTS, MLM_KEY

HIDDEN = "has not enabled verbose error reporting"  # gradio_client's words for {"error": null}


@pytest.fixture(scope="module")
def endpoints(client):
    """(api_name, parameters) of every named endpoint that takes inputs."""
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    return {name: ep["parameters"] for name, ep in named.items() if ep["parameters"]}


def _wrong(parameter):
    """A value of the wrong type for this parameter."""
    kind = parameter["python_type"]["type"]
    if kind in ("float", "int", "bool"):
        return "not a number"
    if kind.startswith("list"):
        return "not a list"
    return 12345


def _readable(exc: AppError) -> str:
    message = str(exc)
    assert message and HIDDEN not in message, f"no readable message: {message!r}"
    assert "Traceback" not in message
    return message


def _call(client, name, args):
    """The endpoint's answer: either a result, or an error with a readable message."""
    try:
        client.predict(*args, api_name=name)
    except AppError as exc:
        return _readable(exc)
    return None


def test_the_issues_example_fill_mask_with_null_or_a_string_top_k(client):
    for args in ((None, None, None), ("The [MASK] sat.", MLM_KEY, "five"), ("The [MASK] sat.", MLM_KEY, None)):
        with pytest.raises(AppError) as info:
            client.predict(*args, api_name="/fill_mask")
        message = _readable(info.value)
        assert "Top-k" in message and "number from 1 to" in message


def test_every_endpoint_answers_null_inputs_readably(client, endpoints):
    for name, parameters in endpoints.items():
        _call(client, name, [None] * len(parameters))


def test_every_endpoint_answers_wrong_types_readably(client, endpoints):
    for name, parameters in endpoints.items():
        _call(client, name, [_wrong(p) for p in parameters])


def test_every_number_input_names_itself_when_sent_a_string_or_nothing(client, endpoints):
    """Each slider or number alone wrong (a string, or null: an emptied number box), the
    other inputs at their defaults: the message names that input (the handler never runs, so
    nothing heavy starts; a null used to reach the training handlers as int(None))."""
    checked = 0
    for name, parameters in endpoints.items():
        defaults = [p.get("parameter_default") for p in parameters]
        for i, parameter in enumerate(parameters):
            if parameter["component"] not in ("Slider", "Number"):
                continue
            for wrong in ("not a number", None):
                args = list(defaults)
                args[i] = wrong
                with pytest.raises(AppError) as info:
                    client.predict(*args, api_name=name)
                message = _readable(info.value)
                assert parameter["label"] in message and "number" in message, (name, wrong, message)
                assert "unexpectedly" not in message, (name, wrong, message)
                checked += 1
    assert checked >= 20  # top-k, rates, layers, heads, seeds, steps, ...


def test_missing_input_values_are_named(app_server, endpoints):
    """Too few values, sent as raw JSON (gradio_client fills in defaults itself). A session
    state input is not among the listed parameters but takes a place in the data (gradio_client
    sends None there): the message counts it and says to send null."""
    with urllib.request.urlopen(app_server + "config", timeout=60) as resp:
        config = json.loads(resp.read())
    kinds = {c["id"]: c["type"] for c in config["components"]}
    inputs = {"/" + d["api_name"]: d["inputs"] for d in config["dependencies"] if d.get("api_name")}
    for name, parameters in endpoints.items():
        states = sum(kinds[i] == "state" for i in inputs[name])
        parameters = [*parameters, *[None] * states]
        url = app_server + "gradio_api/call" + name
        request = urllib.request.Request(url, data=json.dumps({"data": []}).encode(),
                                         headers={"Content-Type": "application/json"})
        event_id = json.loads(urllib.request.urlopen(request, timeout=30).read())["event_id"]
        stream = urllib.request.urlopen(f"{url}/{event_id}", timeout=60).read().decode()
        assert "event: error" in stream, (name, stream)
        payload = json.loads(stream.split("data:", 1)[1].strip().splitlines()[0])
        assert payload["error"], (name, payload)
        assert f"takes {len(parameters)} input value" in payload["error"]
        assert parameters[0]["label"] in payload["error"]
        assert payload["error"].count("the session's state: send null") == states


def test_the_word_click_endpoint_says_it_needs_a_click(client):
    with pytest.raises(AppError) as info:
        client.predict("The cat sat.", api_name="/mask_word")
    assert "click" in _readable(info.value)


def test_the_app_keeps_serving_after_bad_requests(client):
    table, *_ = client.predict("A [MASK] day.", MLM_KEY, 2, api_name="/fill_mask")
    assert len(table["data"]) == 2


def test_bad_input_leaves_no_traceback_in_the_server_log(client):
    """What a person typed or an endpoint was sent is answered in one readable line and is
    not the server's fault: no traceback of it in the server's log (Gradio prints one for
    every ``gr.Error`` unless told not to; a class's typos filled the log)."""
    log = ARTIFACTS / "app-server.log"  # the shared app's (helpers.running_app)
    start = log.stat().st_size
    messages = []
    for args in (("A sentence without any mask.", MLM_KEY, 5),  # the core's InputError
                 ("The [MASK] sat.", MLM_KEY, "five"),  # a value Gradio refuses before the handler
                 ("The [MASK] sat.", "<b>not-a-model</b>", 5)):  # a choice not offered: Gradio's own gr.Error
        with pytest.raises(AppError) as info:
            client.predict(*args, api_name="/fill_mask")
        messages.append(_readable(info.value))
    assert "no mask" in messages[0] and "Top-k" in messages[1]
    assert "not in the list of choices" in messages[2] and "&lt;b&gt;not-a-model" in messages[2]  # as text
    client.predict("A [MASK] day.", MLM_KEY, 2, api_name="/fill_mask")  # a request after them, answered
    with open(log, "rb") as f:
        f.seek(start)
        added = f.read().decode("utf-8", "replace")
    assert "Traceback" not in added, added[-2000:]
