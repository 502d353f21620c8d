"""Deep links and results on arrival: the UI wiring (the rules are in ``components.shell.links``).

Every tab's build function returns a ``LinkTarget``: its tab, the inputs a link may set
(by parameter name) and the views it computes on arrival. Here:

* each tab computes its views when it is selected (the views cache their default
  examples per process, so arriving costs one computation per process, not per visitor);
  a tab's further sections (sub-tabs: the browser draws only the section on screen, so a
  long tab opens as fast as its first section) compute theirs when they are selected;
* at page load, the page's query parameters are read (``gr.Request.query_params``),
  checked, written into the inputs, the tab selected (by the page, after the load event:
  ``select_after_load``), and that tab's views computed;
  what was replaced is said in a visible note (escaped text);
* "Copy link to this view" writes the link of the tab on screen with its inputs into a
  text box, and into the clipboard where the browser allows it.
"""

from __future__ import annotations

import json

from dataclasses import dataclass, field

import gradio as gr

from models import EncoderLabError, list_models, load_model

from .common import api_parameters
from .links import DEFAULT_TAB, apply_limits, link_query, notes_markdown, parse_link

# Selects the tab a link chose, in the browser: the load event never lists the gr.Tabs among
# its outputs, because Gradio's page then copies the state of every component inside it (the
# whole app) at each status change of every later event (see select_after_load).
SELECT_TAB_JS = """(tab) => tab ? {__type__: "update", selected: tab} : {__type__: "update"}"""

COPY_JS = """(query) => {
  if (!query) return query;
  const url = window.location.origin + window.location.pathname + query;
  try { navigator.clipboard.writeText(url).catch(() => {}); } catch (e) {}
  return url;
}"""


@dataclass
class LinkTarget:
    """A tab as links see it."""

    slug: str
    tab: object  # the gr.Tab
    inputs: dict = field(default_factory=dict)  # link parameter -> component
    # computed on arrival: (fn, inputs, outputs) or (fn, inputs, outputs, event settings)
    views: list = field(default_factory=list)
    # the tab's further sections: each computes its views when it is selected
    sections: list[Section] = field(default_factory=list)
    # run in the same event, before the views: refreshes of the tab's pickers, (fn, inputs,
    # outputs); they must not fail (a request of their own cost the page a task per answer)
    pickers: list = field(default_factory=list)


@dataclass
class Section:
    """A sub-tab of a tab, past its first: its name and the views it computes when selected."""

    name: str
    tab: object  # the gr.Tab, inside the tab's own gr.Tabs
    views: list = field(default_factory=list)


def model_shape(model_key: str) -> tuple[int, int]:
    """(layers, heads) of a model, from its loaded config."""
    config = load_model(model_key).model.config
    return int(config.num_hidden_layers), int(config.num_attention_heads)


def _checked(view, current: dict):
    """The link's view with layer and head checked against the model it will show."""
    if "layer" not in view.values and "head" not in view.values:
        return view
    model_key = view.values.get("model") or current.get("model")
    try:
        return apply_limits(view, *model_shape(model_key), model_key)
    except EncoderLabError:  # the model cannot load: its view will say why
        return view


def _value(name: str, value):
    return list(value) if name == "models" else value


class Arrival:
    """Several views computed in one event (one request per tab shown, one per link opened:
    a page that fires many events at once keeps Gradio's answer stream busy for long)."""

    def __init__(self, views, pickers=()):
        """``pickers`` (LinkTarget.pickers) run first and never fail; ``views`` follow."""
        self.inputs, self.outputs, self.plan = [], [], []
        for fn, inputs, outputs, *_ in [*pickers, *views]:
            many = isinstance(outputs, list)
            self.plan.append((fn, [self._index(self.inputs, c) for c in inputs],
                              [self._index(self.outputs, c) for c in (outputs if many else [outputs])], many))

    @staticmethod
    def _index(blocks: list, block) -> int:
        for i, known in enumerate(blocks):
            if known is block:
                return i
        blocks.append(block)
        return len(blocks) - 1

    def run(self, values) -> tuple:
        """The outputs of the pickers and views. A view that fails says so in a warning and
        leaves its outputs as they were; when every one fails, its error is the event's."""
        result, failures = [gr.skip()] * len(self.outputs), []
        for fn, ins, outs, many in self.plan:
            try:
                answer = fn(*[values[i] for i in ins])
            except gr.Error as exc:
                failures.append(exc)
                continue
            for i, value in zip(outs, answer if many else [answer]):
                result[i] = value
        if failures and len(failures) == len(self.plan):  # (pickers never fail)
            raise failures[0]
        for exc in failures:
            gr.Warning(str(exc.message))
        return tuple(result)


def _skipped(value) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update" and len(value) == 1


def build_link_bar():
    """The note, the copy button and the link box, at the top of the page: the button and the
    box folded in one closed line, so that a phone's first screen shows the first tab's input."""
    note = gr.Markdown("", elem_id="link-note")
    with gr.Accordion("Link to this view", open=False, elem_id="link-bar"):
        with gr.Row():
            button = gr.Button("Copy link to this view", scale=1, size="sm", elem_id="copy-link")
            box = gr.Textbox(label="Link to this view", interactive=False, scale=5, elem_id="view-link",
                             show_label=True, placeholder="Press “Copy link to this view”")
    return note, button, box


def wire_links(demo: gr.Blocks, tabs: gr.Tabs, targets: list[LinkTarget], note, button, box) -> None:
    """Arrival computations, the page-load link reader and the link writer."""
    # the tab on screen (set by each tab's select and by a link); an input of ``view_link``
    current = gr.Textbox(DEFAULT_TAB, visible=False, label="Tab")
    chosen_tab = gr.Textbox("", visible=False, label="Tab chosen by the link")  # its id, or ""
    for target in targets:
        # in the browser: no request (each answer costs Gradio's client a task of its own, and a
        # tab switch sent three of them; the slug is a fixed identifier, json-quoted)
        target.tab.select(None, None, current, js=f"() => {json.dumps(target.slug)}", api_visibility="private")
        # the tab's views when it is selected, each further section's when that is selected
        for tab, views, pickers in [(target.tab, target.views, target.pickers),
                                    *((s.tab, s.views, []) for s in target.sections)]:
            if views or pickers:
                arrival = Arrival(views, pickers)
                # queued: a view that fails says why in a toast (gr.Error, gr.Warning), which
                # only a queued event delivers (unqueued, the page shows a bare "Error")
                settings = next((v[3] for v in views if len(v) > 3), {})
                tab.select(lambda *values, a=arrival: a.run(values), arrival.inputs, arrival.outputs,
                           api_visibility="private", trigger_mode="always_last", **settings)

    link_inputs = [(t.slug, name, comp) for t in targets for name, comp in t.inputs.items()]
    components = [comp for _, _, comp in link_inputs]
    # The tab the page opens on computes its views in the load event itself (one request, as
    # before links existed); a link to another tab selects it, and its select event computes.
    landing = Arrival(next((t.views for t in targets if t.slug == DEFAULT_TAB), []))
    load_inputs, load_outputs = [], []
    for block in components + landing.inputs:
        Arrival._index(load_inputs, block)
    for block in [chosen_tab, current, note, *components, *landing.outputs]:
        Arrival._index(load_outputs, block)

    def open_link(request: gr.Request, *values):
        params = dict(request.query_params) if request is not None else {}
        shown = dict(zip(map(id, load_inputs), values))  # what the page holds now
        view = parse_link(params, list_models())
        on_tab = {name: shown[id(comp)] for slug, name, comp in link_inputs if slug == view.tab}
        view = _checked(view, on_tab)
        chosen = "tab" in params or "lesson" in params  # else the page stays where the user is
        out = {id(note): notes_markdown(view.notes)}
        if chosen:
            out[id(chosen_tab)], out[id(current)] = view.tab_id, view.tab
        for slug, name, comp in link_inputs:
            if slug == view.tab and name in view.values:
                out[id(comp)] = shown[id(comp)] = _value(name, view.values[name])
        if view.tab == DEFAULT_TAB:
            answers = landing.run([shown[id(block)] for block in landing.inputs])
            out.update({id(block): a for block, a in zip(landing.outputs, answers) if not _skipped(a)})
        return tuple(out.get(id(block), gr.skip()) for block in load_outputs)

    select_after_load(demo.load(open_link, load_inputs, load_outputs, api_visibility="private"), chosen_tab, tabs)

    def view_link(tab: str, *values) -> str:
        """The query string of the view on screen (the ``view_link`` API)."""
        chosen = {name: v for (slug, name, _), v in zip(link_inputs, values) if slug == tab}
        return link_query(tab, chosen)

    api_parameters(view_link, ["tab", *(f"{slug}_{name}" for slug, name, _ in link_inputs)])
    button.click(view_link, [current, *components], box, api_name="view_link").then(
        None, box, box, js=COPY_JS, api_visibility="private")


def select_after_load(load, chosen, tabs) -> None:
    """After the load event, select the tab whose id ``chosen`` holds (none when empty): a
    browser-side step, no request and no status of its own.

    Gradio's page keeps the loading status of every component that an event with a server
    function has listed among its outputs, and at each status change of each event it
    copies the state of each of those components and of everything inside them, value by
    value. With the gr.Tabs among the load event's outputs that was the whole app at every
    step of every later event (a one-off count: 2.4 times the copies in one Attention paint
    with it as without it).
    """
    load.then(None, chosen, tabs, js=SELECT_TAB_JS, api_visibility="private")
