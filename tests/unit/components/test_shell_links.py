"""Deep links (components/shell/links.py): every tab's parameters read and written, and every
unknown or hostile value replaced by the default with a note that carries no markup."""

from __future__ import annotations

import re
import threading
from urllib.parse import parse_qsl

import pytest

from components.lessons.copy import STEPS
from components.shell.links import (
    DEFAULT_TAB,
    LINK_MAX_TEXT,
    TAB_PARAMS,
    TABS,
    LinkView,
    apply_limits,
    link_query,
    notes_markdown,
    parse_link,
)
from components.shell.view_cache import cached_view
from helpers import ENCODER_KEY, MLM_KEY, skip_if_available
from models import list_models

HOSTILE = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "</textarea><svg onload=alert(1)>",
    "<!-- x --> The [MASK]",
    "a <a href='javascript:alert(1)'>link</a>",
    "javascript:alert(1)",
    "< script >alert(1)",
)


@pytest.fixture(scope="module")
def models():
    return list_models()


def no_markup(view: LinkView) -> None:
    """No note may carry a tag opener or a script address, whatever the link held."""
    for note in view.notes:
        assert "<" not in note and ">" not in note and "javascript" not in note.lower(), note


def test_no_parameters_open_the_default_tab(models):
    assert parse_link({}, models) == LinkView(DEFAULT_TAB, {}, ())


@pytest.mark.parametrize("tab", TABS, ids=lambda t: t.slug)
def test_every_tab_by_its_label_and_by_its_id(tab, models):
    assert tab.slug == re.sub(r"[^a-z0-9]+", "-", tab.label.lower()).strip("-")
    assert parse_link({"tab": tab.slug}, models).tab == tab.slug
    view = parse_link({"tab": tab.tab_id.upper()}, models)
    assert (view.tab, view.tab_id, view.notes) == (tab.slug, tab.tab_id, ())


def test_attention_link_with_every_input(models):
    params = {"tab": "attention", "text": "The bank was closed.", "text_pair": "We sat by the river.",
              "model": MLM_KEY, "layer": "1", "head": "2", "mode": "rollout", "causal": "1",
              "projector": "1", "dark": "1"}
    view = parse_link(params, models)
    assert view.tab == "attention" and view.notes == ()
    assert view.values == {"text": "The bank was closed.", "text_pair": "We sat by the river.",
                           "model": MLM_KEY, "layer": 1, "head": 2, "mode": "rollout", "causal": True}


def test_a_lesson_by_slug_or_number_opens_the_lessons_tab(models):
    for i, step in enumerate(STEPS, 1):
        assert parse_link({"lesson": str(i)}, models) == LinkView("lessons", {"lesson": step.slug}, ())
        assert parse_link({"tab": "lessons", "lesson": step.slug.upper()}, models).values == {"lesson": step.slug}
    view = parse_link({"lesson": str(len(STEPS) + 1)}, models)
    assert view.tab == "lessons" and view.values == {} and "not a step" in view.notes[0]


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_tab_and_text_get_defaults_and_a_note(payload, models):
    view = parse_link({"tab": payload, "text": payload, "text_pair": payload}, models)
    assert view.tab == DEFAULT_TAB and view.values == {}
    assert any("not a tab of this app" in n for n in view.notes)
    assert any("markup" in n for n in view.notes)
    no_markup(view)
    attention = parse_link({"tab": "attention", "text": payload, "text_pair": payload, "model": payload}, models)
    assert attention.values == {} and len(attention.notes) == 3
    no_markup(attention)


def test_an_empty_second_text_means_no_pair(models):
    assert parse_link({"tab": "attention", "text_pair": ""}, models).values == {"text_pair": ""}
    assert "text_pair=&" in link_query("attention", {"text": "a", "text_pair": "", "layer": 1})
    empty = parse_link({"tab": "attention", "text": " "}, models)  # an empty text: the default, and said so
    assert empty.values == {} and empty.notes == ("The link's text is empty; the default text is shown instead.",)


def test_a_refused_word_parameter_says_the_default_is_used_not_a_default_text(models):
    view = parse_link({"tab": "inside-one-layer", "step": "<img src=x onerror=alert(1)>"}, models)
    assert view.values == {} and len(view.notes) == 1
    assert "markup" in view.notes[0] and view.notes[0].endswith("the default is used.")
    assert "text" not in view.notes[0].replace("The link's step", "")


def test_mask_spelling_is_text_not_markup(models):
    view = parse_link({"tab": "fill-mask", "text": "The capital of France is <mask>."}, models)
    assert view.values == {"text": "The capital of France is <mask>."} and view.notes == ()


def test_over_long_and_control_character_text(models):
    long = parse_link({"tab": "fill-mask", "text": "a" * (LINK_MAX_TEXT + 1)}, models)
    assert long.values == {} and f"{LINK_MAX_TEXT:,} characters" in long.notes[0]
    exact = parse_link({"tab": "fill-mask", "text": "a" * LINK_MAX_TEXT}, models)
    assert exact.values == {"text": "a" * LINK_MAX_TEXT}
    control = parse_link({"tab": "fill-mask", "text": "a\x00b"}, models)
    assert control.values == {} and "control characters" in control.notes[0]


def test_models_unknown_unavailable_or_without_the_head(models):
    unknown = parse_link({"tab": "fill-mask", "model": "gpt-5"}, models)
    assert unknown.values == {} and unknown.notes == (
        "The link's model “gpt-5” is not one this app knows; the default model is used.",)
    no_head = parse_link({"tab": "fill-mask", "model": ENCODER_KEY}, models)  # no MLM head
    assert no_head.values == {} and "lacks a trained MLM head" in no_head.notes[0]
    assert parse_link({"tab": "embeddings", "model": ENCODER_KEY}, models).values == {"model": ENCODER_KEY}
    skip_if_available("bert-base")
    offline = parse_link({"tab": "attention", "model": "bert-base"}, models)
    assert offline.values == {} and "not available here" in offline.notes[0]


def test_compare_keeps_the_usable_models_of_a_list(models):
    view = parse_link({"tab": "compare", "models": f"{MLM_KEY},nope,{ENCODER_KEY}"}, models)
    assert view.values == {"models": (MLM_KEY,)}
    assert "“nope”" in view.notes[0] and "left out" in view.notes[0]


@pytest.mark.parametrize("raw,why", [("99", "out of range"), ("-1", "out of range"), ("1.5", "whole number"),
                                     ("nan", "whole number"), ("inf", "whole number"), ("two", "not a number")])
def test_numbers_out_of_range_or_not_numbers(raw, why, models):
    view = parse_link({"tab": "attention", "layer": raw}, models)
    assert view.values == {} and why in view.notes[0]


def test_choices_and_flags(models):
    bad = parse_link({"tab": "attention", "mode": "<b>", "causal": "maybe"}, models)
    assert bad.values == {} and len(bad.notes) == 2
    no_markup(bad)
    good = parse_link({"tab": "fine-tuning-search", "pooling": "CLS", "k": "7"}, models)
    assert good.values == {"pooling": "cls", "k": 7}
    assert parse_link({"tab": "fill-mask", "causal": "0"}, models).values == {"causal": False}


def test_unknown_parameters_are_named_only_when_plain(models):
    view = parse_link({"tab": "models", "colour": "red", "<x onmouseover=1>": "1"}, models)
    assert view.tab == "models" and len(view.notes) == 1
    assert "colour" in view.notes[0] and "onmouseover" not in view.notes[0]
    # a parameter of another tab is not "unknown": it is simply not used here
    assert parse_link({"tab": "models", "layer": "3"}, models).notes == ()


def test_layer_and_head_against_the_model():
    view = LinkView("attention", {"layer": 6, "head": 11, "text": "x"}, ())
    checked = apply_limits(view, num_layers=6, num_heads=12, model_key="minilm-mlm")
    assert checked.values == {"head": 11, "text": "x"}
    assert checked.notes == ("The link's layer 6 is out of range for “minilm-mlm” (0 to 5); the default is used.",)
    # Embeddings count layers 0..L (0 = input embeddings) and from the end
    assert apply_limits(LinkView("embeddings", {"layer": 6}), 6, 12).values == {"layer": 6}
    assert apply_limits(LinkView("embeddings", {"layer": -7}), 6, 12).values == {"layer": -7}
    assert apply_limits(LinkView("embeddings", {"layer": -8}), 6, 12).values == {}
    # Inside one layer counts layers as Attention does
    assert apply_limits(LinkView("inside-one-layer", {"layer": 6, "head": 3}), 6, 12).values == {"head": 3}


@pytest.mark.parametrize("tab", [t.slug for t in TABS])
def test_a_written_link_reads_back_to_the_same_view(tab, models):
    values = {"text": "Le café <mask> & co: 100% \"sûr\"?\nLine two.", "text_pair": "B & b",
              "model": MLM_KEY, "top_k": 7, "causal": True, "mask": 1, "target": "café",
              "rate": 0.25, "seed": 3, "layer": 2.0, "head": 1, "mode": "mean",
              "models": [MLM_KEY, "splade-tiny"], "pooling": "cls", "k": 5, "lesson": STEPS[4].slug,
              "token": 3, "step": "weights", "heads": "2:1, 0:3", "compare": "splade-tiny",
              "clean": "The capital of France is [MASK].", "corrupt": "The capital of Italy is [MASK]."}
    query = link_query(tab, values)
    assert query.startswith(f"?tab={tab}")
    view = parse_link(dict(parse_qsl(query[1:], keep_blank_values=True)), models)
    expected = {p.name: values[p.name] for p in TAB_PARAMS[tab]}
    if "models" in expected:
        expected["models"] = tuple(expected["models"])
    if "layer" in expected:
        expected["layer"] = 2
    assert view.tab == tab and view.notes == () and view.values == expected


def test_notes_markdown_escapes_every_markdown_and_html_character():
    md = notes_markdown(["a <b> [x](javascript:y) *z* `c` # h"])
    assert "<b>" not in md and "&lt;b&gt;" in md
    assert "\\[x\\]\\(javascript:y\\)" in md and "\\*z\\*" in md and "\\`c\\`" in md
    assert notes_markdown([]) == ""


def test_cached_view_computes_once_for_concurrent_callers():
    calls, gate = [], threading.Event()

    @cached_view(maxsize=2)
    def view(x):
        calls.append(x)
        gate.wait(5)
        return [x]

    results = []
    threads = [threading.Thread(target=lambda: results.append(view(1))) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert calls == [1] and len(results) == 8 and all(r is results[0] for r in results)
    assert view(1.0) is results[0]  # 1.0 from a slider and 1 from the API: one view
    view(2), view(3)  # the oldest is dropped past maxsize
    view(1)
    assert calls == [1, 2, 3, 1]


def test_cached_view_keeps_no_errors():
    calls = []

    @cached_view()
    def view(x):
        calls.append(x)
        if len(calls) == 1:
            raise ValueError("first call fails")
        return x

    with pytest.raises(ValueError):
        view(5)
    assert view(5) == 5 and calls == [5, 5]


def test_a_tabs_arrival_runs_its_pickers_first_and_a_failing_view_warns_beside_them(monkeypatch):
    """components/shell/deep_links.Arrival: the pickers' refresh rides in the arrival event; a
    view that fails then says so in a warning (the picker's update still goes out), and an
    arrival of views only raises the view's own error."""
    import gradio as gr

    from components.shell import deep_links

    warned = []
    monkeypatch.setattr(deep_links.gr, "Warning", lambda message: warned.append(message))
    text, picker, known, out = object(), object(), object(), object()
    calls = []

    def refresh(held):
        calls.append("picker")
        return "picker update", ["a", "b"]

    def view(value):
        calls.append("view")
        if value == "bad":
            raise gr.Error("Got 1 sentence(s); give two sentences to compare.")
        return f"view of {value}"

    arrival = deep_links.Arrival([(view, [text], out)], [(refresh, [known], [picker, known])])
    assert arrival.inputs == [known, text] and arrival.outputs == [picker, known, out]
    assert arrival.run(["held", "good"]) == ("picker update", ["a", "b"], "view of good")
    assert calls == ["picker", "view"] and warned == []
    first, second, skipped = arrival.run(["held", "bad"])
    assert (first, second) == ("picker update", ["a", "b"]) and skipped == gr.skip()
    assert warned == ["Got 1 sentence(s); give two sentences to compare."]
    with pytest.raises(gr.Error, match="two sentences"):  # no picker: the view's error is the event's
        deep_links.Arrival([(view, [text], out)]).run(["bad"])


def test_the_readme_names_every_tab_and_every_parameter_a_link_reads():
    """The README's Deep links paragraph: the tabs' slugs in order and the inputs a link may
    set, as links.py reads them (`lesson` has its own example there)."""
    from helpers import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    slugs = re.search(r"`tab` is the tab's\s+label in lower case with hyphens \(([^)]*);", readme).group(1)
    assert re.findall(r"`([a-z-]+)`", slugs) == [tab.slug for tab in TABS]
    inputs = re.search(r"each tab reads its main inputs \(([^)]*?); see `components/shell/links.py`", readme).group(1)
    listed = re.findall(r"`([a-z_]+)`", inputs)
    read = {p.name for params in TAB_PARAMS.values() for p in params} - {"lesson"}
    assert len(listed) == len(set(listed)) and set(listed) == read, (sorted(read - set(listed)), sorted(set(listed) - read))
