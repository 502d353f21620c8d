"""One request per keystroke: the live fill-mask answer carries the clickable words too."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from gradio_client import Client

from helpers import MLM_KEY
from models import fill_mask, text_segments


def _shown(words) -> list[tuple[str, str | None]]:
    """The words strip as the page receives it, back to (segment, class) pairs."""
    return [(w["token"], w["class_or_confidence"]) for w in words]


def _expected_words(text: str) -> list[tuple[str, str | None]]:
    return [(seg, "mask" if kind == "mask" else None) for seg, kind in text_segments(text)]


def test_live_answer_has_the_words_and_the_core_predictions(client):
    text = "The [MASK] sat on the mat."
    words, table, _plot, filled, status, bars = client.predict(text, MLM_KEY, 3, True, False,
                                                               api_name="/fill_mask_live")
    assert _shown(words) == _expected_words(text)
    expected = fill_mask(MLM_KEY, text, top_k=3)
    assert [row[2].replace("␣", " ") for row in table["data"]] == [p.token for p in expected.masks[0].predictions]
    assert filled == expected.filled_text
    assert "1 mask(s)" in status
    assert bars.count("<tbody>") == 1 and bars.count("<tr>") == 1 + 3  # the header row and the top 3


def test_words_follow_the_text_when_live_is_off_or_no_mask(client):
    text = "Click a word, any word."
    words, *_, status, _bars = client.predict(text, MLM_KEY, 3, True, False, api_name="/fill_mask_live")
    assert _shown(words) == _expected_words(text)
    assert "Add [MASK]" in status
    words, *_ = client.predict("Live is off [MASK].", MLM_KEY, 3, False, False, api_name="/fill_mask_live")
    assert _shown(words) == _expected_words("Live is off [MASK].")


def test_text_segments_endpoint_is_the_core_function(client):
    text = "The [MASK] isn't here <mask>."
    assert [tuple(s) for s in client.predict(text, api_name="/text_segments")] == text_segments(text)


def test_concurrent_live_requests_each_get_their_own_answer(app_server):
    """Requests that share a forward on the server still answer each its own text."""
    texts = [f"The {w} [MASK] on the mat." for w in ("cat", "dog", "bird", "child", "old man", "teacher")]

    def ask(text):
        own = Client(app_server, verbose=False, download_files=False)
        _words, _table, _plot, filled, _status, _bars = own.predict(text, MLM_KEY, 3, True, False,
                                                             api_name="/fill_mask_live")
        return filled

    with ThreadPoolExecutor(len(texts)) as pool:
        answers = list(pool.map(ask, texts))
    assert answers == [fill_mask(MLM_KEY, t, top_k=3).filled_text for t in texts]
