"""First visit: the default views computed in the background after start-up come from the
cache when a visitor opens each tab and lesson step; the warm-up waits for live requests."""

from __future__ import annotations

import threading

import pytest

from components.lessons.copy import STEPS
from components.shell.links import TABS
from components.shell.view_cache import COMPUTED
from components.shell.warm_views import LiveGate, warm


@pytest.fixture(scope="module")
def demo():
    from app import build_demo

    return build_demo()


def test_the_plan_follows_the_tabs_and_the_lesson_steps_in_order(demo):
    labels = [label for label, _ in demo.first_views]
    tabs = list(dict.fromkeys(label.split(":")[0] for label in labels))
    order = [t.slug for t in TABS]
    assert tabs == sorted(tabs, key=order.index) and tabs[0] == "fill-mask"
    assert {"lessons", "why-this-guess", "attention", "embeddings", "fine-tuning-search"} <= set(tabs)
    steps = [label.split(": ")[1] for label in labels if label.startswith("lessons: ")]
    assert steps == [s.slug for s in STEPS]  # every step, in the lesson's order


def test_a_tabs_further_sections_are_computed_after_every_default_view(demo):
    """Sub-tabs past a tab's first (drawn only when opened, so the tab opens fast) compute
    their views when selected; the warm-up computes them too, after all the default views."""
    from components.shell.links import TABS

    labels = [label for label, _ in demo.first_views]
    first_section = next(i for i, label in enumerate(labels) if label in SECTIONS)
    assert set(labels[first_section:]) == SECTIONS  # all of them, after every default view
    slugs = [t.slug for t in TABS]
    order = [slugs.index(label.split(": ")[0]) for label in labels[first_section:]]
    assert order == sorted(order)  # in the tabs' order


@pytest.mark.parametrize("section, shown, outer", [
    ("The MLM loss", "arithmetic-table", "Masking lab"),
    ("Token + position + segment", "input-embeddings-summary", "Attention"),
    ("One word across the layers", "word-summary", "Embeddings"),
    ("Gradients under MLM", "inside-gradient-note", "Inside one layer"),
    ("What they know", "compare-knowledge-summary", "Compare"),
])
def test_selecting_a_section_computes_its_view_and_opening_its_tab_does_not(demo, section, shown, outer):
    import gradio as gr

    def tab(label):
        return next(b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.label == label)

    def outputs_of(block):
        return {o.elem_id for fn in demo.fns.values() for o in fn.outputs
                if (block._id, "select") in fn.targets}

    assert shown in outputs_of(tab(section))
    assert shown not in outputs_of(tab(outer))  # the tab opens without drawing it


SECTIONS = {"masking-lab: the mlm loss", "attention: token + position + segment",
            "inside-one-layer: gradients under mlm", "which-parts-matter: head importance",
            "which-parts-matter: when does the model know?", "which-parts-matter: causal trace",
            "embeddings: one word across the layers", "compare: what they know"}


# Built on first use by embedding the whole search corpus: minutes on a busy 2-core machine.
# Its view goes through the same cache as the others; the test leaves it out for time.
SLOW = {"fine-tuning-search"}


def test_after_the_warm_up_every_default_view_comes_from_the_cache(demo):
    plan = [(label, view) for label, view in demo.first_views if label not in SLOW]
    before = sum(COMPUTED.values())
    done = warm(plan, LiveGate())
    assert all(ok for _, ok in done), [label for label, ok in done if not ok]
    assert sum(COMPUTED.values()) > before  # the warm-up computed the views
    warmed = sum(COMPUTED.values())
    traces = set()
    for _, open_view in plan:  # a visitor opening each tab and step, as the page does
        traces |= trace_types(open_view())
    assert sum(COMPUTED.values()) == warmed  # nothing computed again: all from the cache
    # every chart these views draw is of a type the page's plotly.js bundle has
    from components.shell.present import TRACES

    assert {"scatter", "bar", "heatmap"} <= traces <= set(TRACES), traces


def trace_types(value) -> set[str]:
    """The Plotly trace types in a view's outputs (figures, plotly JSON, gr.update values)."""
    import plotly.graph_objects as go

    if isinstance(value, go.Figure):
        return {trace.type for trace in value.data}
    if isinstance(value, dict):
        found = set().union(*(trace_types(v) for v in value.values())) if value else set()
        if isinstance(value.get("data"), list):
            found |= {t.get("type", "scatter") for t in value["data"] if isinstance(t, dict)}
        return found
    if isinstance(value, (list, tuple)):
        return set().union(*(trace_types(v) for v in value)) if value else set()
    return set()


def test_the_warm_up_waits_while_a_live_request_is_in_progress():
    gate, ran, live_started, release = LiveGate(), [], threading.Event(), threading.Event()

    def live_request():
        with gate.live():
            live_started.set()
            release.wait(10)

    request = threading.Thread(target=live_request)
    request.start()
    live_started.wait(10)
    warming = threading.Thread(target=warm, args=([("view", lambda: ran.append(gate.in_progress()))], gate))
    warming.start()
    warming.join(0.3)
    assert ran == [] and warming.is_alive()  # held back by the live request
    release.set()
    request.join(10)
    warming.join(10)
    assert ran == [0]  # ran once no request was in progress


def test_the_first_visit_bench_opens_every_tab_and_lesson_step_as_the_app_lists_them(demo):
    """bench/first_visit.py: a link per tab and per lesson step that the app reads as that
    view, in the order the warm-up computes them, waiting on elements the app has."""
    import re

    from bench.first_visit import views
    from components.shell.links import parse_link, tab_by_slug

    opened = views()
    for view in opened:
        link = parse_link(view.query)
        assert (link.tab, link.notes) == (view.query["tab"], ())
        assert tab_by_slug(link.tab).label == view.tab_label
        assert link.values.get("lesson") == view.query.get("lesson")
    assert sorted({v.query["tab"] for v in opened}) == sorted(t.slug for t in TABS)
    assert [v.query["lesson"] for v in opened if "lesson" in v.query] == [s.slug for s in STEPS]
    labels = [f"lessons: {v.query['lesson']}" if "lesson" in v.query else v.query["tab"] for v in opened]
    plan = list(dict.fromkeys(label for label, _ in demo.first_views))
    sections = [label for label in plan if label not in labels]  # sub-tabs: opened from their tab
    assert sections and [label for label in labels if label in plan] == plan[: -len(sections)]
    ids = {b.elem_id for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    classes = {c for b in demo.blocks.values() for c in (getattr(b, "elem_classes", None) or [])}
    for view in opened:
        for selector, *_ in view.checks:
            assert set(re.findall(r"#([\w-]+)", selector)) <= ids, (view.name, selector)
            assert set(re.findall(r"\.(lesson-[\w-]+)", selector)) <= classes, (view.name, selector)


def test_freezing_long_lived_objects_frees_cyclic_garbage_first_and_spares_later_collections():
    """After start-up (and again after the warm-up) the server collects once, then keeps every
    object alive out of later collections: a full collection walked ~575,000 objects with the
    interpreter lock held (~285 ms here) and stalled a class's first burst."""
    import gc
    import weakref

    from components.shell.server import freeze_long_lived

    class Node:
        pass

    garbage, kept = Node(), Node()
    garbage.self = garbage  # a cycle: only the collector frees it
    dead = weakref.ref(garbage)
    del garbage
    try:
        frozen = freeze_long_lived()
        assert dead() is None  # collected before the freeze, not kept forever
        # frozen objects can only go (another thread freeing some, e.g. a client's left from an
        # earlier test) until the next freeze: the count read now is at most the one returned
        assert 0 < gc.get_freeze_count() <= frozen
        assert not any(obj is kept for obj in gc.get_objects())  # out of the collector's walks
    finally:
        gc.unfreeze()  # the rest of the suite as it was
    assert any(obj is kept for obj in gc.get_objects())


def test_the_server_freezes_after_building_and_after_the_warm_up(monkeypatch):
    """app.main freezes once the app is built; the warm-up thread freezes once it is done."""
    import app
    import components.shell.warm_views as warm_views

    calls = []
    monkeypatch.setattr(warm_views, "freeze_long_lived", lambda: calls.append("warm-up") or 0)
    monkeypatch.setattr(warm_views, "enabled", lambda: True)
    thread = warm_views.warm_in_background([("a view", lambda: None)])
    thread.join(timeout=30)
    assert calls == ["warm-up"]

    class Demo:
        first_views = []

        def launch(self, **kwargs):
            calls.append("launch")

    monkeypatch.setattr(app, "build_demo", lambda: calls.append("build") or Demo())
    monkeypatch.setattr(app, "freeze_long_lived", lambda: calls.append("freeze") or 0)
    monkeypatch.setattr(app, "warm_in_background", lambda plan: calls.append("warm"))
    monkeypatch.setattr(app, "limit_malloc_arenas", lambda: False)
    import logging

    import models

    # main's process-wide settings stay as the rest of the suite has them (set_device clears
    # the model cache; the opt-in list and the app's log handler are global too)
    monkeypatch.setattr(models, "set_device", lambda name: None)
    monkeypatch.setattr(models, "allow_hub_models", lambda keys: None)
    log = logging.getLogger("encoder_lab")
    handlers, level = list(log.handlers), log.level
    try:
        app.main(["--port", "0"])
    finally:
        log.handlers[:] = handlers
        log.setLevel(level)
    assert calls == ["warm-up", "build", "freeze", "warm", "launch"]


def test_no_event_with_a_server_function_lists_the_tabs_among_its_outputs(demo):
    """Gradio's page copies, at each status change of every event, the state of each component
    that an event with a server function has listed among its outputs and of everything it
    holds; the gr.Tabs hold the whole app. A link's tab is selected in the browser after the
    load event (deep_links.select_after_load): that step has no server function."""
    config = demo.get_config_file()
    tabs = {c["id"] for c in config["components"] if c["type"] == "tabs"}
    served = [d for d in config["dependencies"] if d.get("backend_fn")]
    assert tabs and served
    assert [d["id"] for d in served if tabs & set(d["outputs"])] == []
    selects = [d for d in config["dependencies"] if not d.get("backend_fn") and tabs & set(d["outputs"])]
    load = next(d for d in config["dependencies"] if any(kind == "load" for _, kind in d["targets"]))
    assert [d.get("trigger_after") for d in selects] == [load["id"]]
