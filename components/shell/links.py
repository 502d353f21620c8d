"""Deep links: a page address that opens one view with its inputs, read and written here.

    ?tab=attention&text=The+bank+was+closed.&layer=3&head=2

``parse_link`` turns a page's query parameters into a ``LinkView`` (which tab, the inputs
to set, and notes on what was replaced); ``apply_limits`` checks a layer and head against
the chosen model; ``link_query`` writes the link for what is on screen. Plain functions:
no Gradio, and the models are passed in (``list_models()``), so every rule is unit-tested.

A value that cannot be used (an unknown tab, a model that is unknown or cannot run here, a
number out of range, text with markup, text too long) is dropped: the view keeps its
default, and a note says what was replaced. A note never repeats a value unless it is a
short run of letters, digits and plain punctuation, so no link can put markup on the page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from ..lessons.copy import STEPS

LINK_MAX_TEXT = 2000  # characters of a text in a link (a longer one gets the default)
LINK_MAX_WORD = 100  # a target word
SAFE_ECHO = re.compile(r"[A-Za-z0-9 ._,+-]{1,40}")
MARKUP = re.compile(r"<\s*/?\s*[A-Za-z!?]|javascript:", re.IGNORECASE)
MASK_SPELLING = re.compile(r"<mask>", re.IGNORECASE)  # RoBERTa's mask token is text, not markup
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class TabLink:
    slug: str  # in links: the tab's label in lower case with hyphens
    tab_id: str  # the gr.Tab id in the code (also accepted in links)
    label: str


TABS = (
    TabLink("fill-mask", "fill-mask", "Fill-mask"),
    TabLink("lessons", "lessons", "Lessons"),
    TabLink("why-this-guess", "attribution", "Why this guess"),
    TabLink("masking-lab", "masking", "Masking lab"),
    TabLink("attention", "attention", "Attention"),
    TabLink("inside-one-layer", "inside", "Inside one layer"),
    TabLink("which-parts-matter", "parts", "Which parts matter"),
    TabLink("embeddings", "embeddings", "Embeddings"),
    TabLink("compare", "compare", "Compare"),
    TabLink("pre-training", "pretrain", "Pre-training"),
    TabLink("fine-tuning-search", "finetune", "Fine-tuning & search"),
    TabLink("models", "models", "Models"),
    TabLink("class", "class", "Class"),
)
DEFAULT_TAB = TABS[0].slug  # the tab the page opens on


@dataclass(frozen=True)
class Param:
    """One input a link may set: its kind and the values it takes."""

    name: str
    kind: str  # text, word, model, models, int, float, choice, bool, lesson
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    capability: str = "any"  # for model(s): what the tab needs the model to do


TEXT, TEXT_PAIR = Param("text", "text"), Param("text_pair", "text")
SEED = Param("seed", "int", 0, 2**31 - 1)
TAB_PARAMS: dict[str, tuple[Param, ...]] = {
    "fill-mask": (TEXT, Param("model", "model", capability="mlm"), Param("top_k", "int", 1, 20),
                  Param("causal", "bool")),
    "lessons": (Param("lesson", "lesson"),),
    "why-this-guess": (TEXT, Param("model", "model", capability="mlm"), Param("mask", "int", 1, 10),
                       Param("target", "word")),
    "masking-lab": (TEXT, Param("model", "model"), Param("rate", "float", 0, 1), SEED),
    "attention": (TEXT, TEXT_PAIR, Param("model", "model", capability="attention"),
                  Param("layer", "int", 0, 47), Param("head", "int", 0, 63),
                  Param("mode", "choice", choices=("head", "mean", "rollout")), Param("causal", "bool")),
    "inside-one-layer": (TEXT, Param("model", "model"), Param("layer", "int", 0, 47), Param("head", "int", 0, 63),
                         Param("token", "int", 0, 511), Param("step", "word")),
    "which-parts-matter": (TEXT, Param("model", "model", capability="mlm"), Param("target", "word"),
                           Param("heads", "word"), Param("mode", "choice", choices=("zero", "mean")),
                           Param("compare", "model", capability="mlm"), Param("clean", "text"),
                           Param("corrupt", "text")),
    "embeddings": (TEXT, Param("model", "model"), Param("layer", "int", -49, 48)),
    "compare": (TEXT, Param("models", "models", capability="mlm")),
    "pre-training": (),
    "fine-tuning-search": (TEXT, Param("model", "model"), Param("pooling", "choice", choices=("mean", "cls")),
                           Param("k", "int", 1, 50)),
    "models": (),
    "class": (),
}
# Read elsewhere or chosen before the tab: never reported as unknown.
# "projector", "dark": read by assets/present.js; "round": a class round's page (components/class_rounds)
GLOBAL_PARAMS = ("tab", "lesson", "projector", "dark", "round")
CAPABILITY_WORDS = {"mlm": "a trained MLM head", "attention": "attention weights"}


@dataclass(frozen=True)
class LinkView:
    """What a link asks for, checked: the tab (slug), the inputs to set, notes on the rest."""

    tab: str
    values: dict = field(default_factory=dict)  # parameter name -> checked value
    notes: tuple[str, ...] = ()

    @property
    def tab_id(self) -> str:
        return tab_by_slug(self.tab).tab_id


def tab_by_slug(slug: str) -> TabLink:
    return next(t for t in TABS if t.slug == slug)


def shown(value) -> str:
    """A value repeated in a note: only short plain text, else nothing at all."""
    text = str(value)
    return f"“{text}” " if SAFE_ECHO.fullmatch(text) else ""


def _find_tab(value: str | None) -> TabLink | None:
    wanted = (value or "").strip().lower()
    return next((t for t in TABS if wanted in (t.slug, t.tab_id)), None)


def _number(param: Param, raw: str) -> tuple[object | None, str | None]:
    what = f"The link's {param.name} {shown(raw)}"
    try:
        value = float(raw)
    except ValueError:
        return None, f"{what}is not a number; the default is used."
    if not math.isfinite(value) or (param.kind == "int" and not value.is_integer()):
        return None, f"{what}is not a {'whole ' if param.kind == 'int' else ''}number; the default is used."
    if not param.low <= value <= param.high:
        return None, f"{what}is out of range ({param.low:g} to {param.high:g}); the default is used."
    return (int(value) if param.kind == "int" else value), None


def _text(param: Param, raw: str) -> tuple[str | None, str | None]:
    limit = LINK_MAX_WORD if param.kind == "word" else LINK_MAX_TEXT
    what = f"The link's {param.name}"
    instead = "the default text is shown instead" if param.kind == "text" else "the default is used"
    if len(raw) > limit:
        return None, f"{what} is longer than {limit:,} characters; {instead}."
    if MARKUP.search(MASK_SPELLING.sub("", raw)):
        return None, (f"{what} contained markup (an HTML tag or a script address), which this app never "
                      f"runs; {instead}.")
    if CONTROL.search(raw):
        return None, f"{what} contained control characters; {instead}."
    return raw, None


def _model(param: Param, raw: str, models) -> tuple[str | None, str | None]:
    spec = next((m for m in models if m.key == raw.strip()), None)
    if spec is None:
        return None, f"The link's model {shown(raw)}is not one this app knows; the default model is used."
    if not spec.available:
        return None, f"The model {shown(spec.key)}is not available here; the default model is used."
    if not spec.can(param.capability):
        need = CAPABILITY_WORDS.get(param.capability, param.capability)
        return None, f"The model {shown(spec.key)}lacks {need}, which this view needs; the default model is used."
    return spec.key, None


def _models(param: Param, raw: str, models) -> tuple[tuple[str, ...] | None, str | None]:
    keys, notes = [], []
    for part in raw.split(",")[:20]:
        if part.strip():
            key, note = _model(param, part, models)
            keys.append(key) if key else notes.append(note)
    if notes:
        return (tuple(keys) or None), " ".join(notes).replace("the default model is used", "left out")
    return (tuple(keys) or None), None


def _lesson(raw: str) -> tuple[str | None, str | None]:
    wanted = raw.strip().lower()
    if wanted.isdigit() and 1 <= int(wanted) <= len(STEPS):
        return STEPS[int(wanted) - 1].slug, None
    if any(s.slug == wanted for s in STEPS):
        return wanted, None
    return None, f"The link's lesson {shown(raw)}is not a step of the lesson (1 to {len(STEPS)}); it opens on step 1."


def check_value(param: Param, raw: str, models=()) -> tuple[object | None, str | None]:
    """(the value to use, None) or (None, a note saying what was replaced)."""
    if param.kind in ("text", "word"):
        return _text(param, raw)
    if param.kind in ("int", "float"):
        return _number(param, raw)
    if param.kind == "bool":
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return lowered in ("1", "true", "yes", "on"), None
        return None, f"The link's {param.name} {shown(raw)}is not 1 or 0; the default is used."
    if param.kind == "choice":
        if raw.strip().lower() in param.choices:
            return raw.strip().lower(), None
        return None, f"The link's {param.name} {shown(raw)}is not one of {', '.join(param.choices)}; the default is used."
    if param.kind == "model":
        return _model(param, raw, models)
    if param.kind == "models":
        return _models(param, raw, models)
    if param.kind == "lesson":
        return _lesson(raw)
    raise ValueError(f"unknown parameter kind {param.kind!r}")


def parse_link(params: dict, models=()) -> LinkView:
    """The view a page's query parameters ask for; ``models``: ``list_models()``."""
    params = {str(k): str(v) for k, v in dict(params or {}).items()}
    notes: list[str] = []
    raw_tab = params.get("tab")
    found = _find_tab(raw_tab)
    if raw_tab is not None and found is None:
        notes.append(f"The link's tab {shown(raw_tab)}is not a tab of this app; it opens on "
                     f"{tab_by_slug(DEFAULT_TAB).label}.")
    if found is None:  # a lesson alone opens the Lessons tab
        found = tab_by_slug("lessons" if "lesson" in params else DEFAULT_TAB)
    values = {}
    for param in TAB_PARAMS[found.slug]:
        raw = params.get(param.name)
        if raw is not None and raw.strip() == "" and param.name == "text_pair":
            values[param.name] = ""  # an empty second text is a choice: one text, no pair
            continue
        if raw is not None and raw.strip() == "" and param.kind == "text":
            notes.append(f"The link's {param.name} is empty; the default text is shown instead.")
            continue
        if raw is None or raw.strip() == "":
            continue
        value, note = check_value(param, raw, models)
        if value is not None:
            values[param.name] = value
        if note:
            notes.append(note)
    known = {p.name for ps in TAB_PARAMS.values() for p in ps} | set(GLOBAL_PARAMS)
    unknown = [name for name in params if name not in known]
    if unknown:
        named = [n for n in unknown if re.fullmatch(r"[A-Za-z0-9_-]{1,30}", n)]
        listed = ", ".join(named[:5]) + (" and others" if len(named) < len(unknown) or len(named) > 5 else "")
        notes.append(f"The link's unknown parameter(s) {listed or '(unreadable names)'} were ignored.")
    return LinkView(found.slug, values, tuple(notes))


def apply_limits(view: LinkView, num_layers: int, num_heads: int, model_key: str = "the model") -> LinkView:
    """Drop a layer or head the chosen model does not have (a note says so).

    Attention and Inside one layer count layers 0 .. num_layers - 1; Embeddings 0 ..
    num_layers (0 = the input embeddings), negative from the end."""
    values, notes = dict(view.values), list(view.notes)
    one_layer = view.tab in ("attention", "inside-one-layer")
    layer_range = (0, num_layers - 1) if one_layer else (-(num_layers + 1), num_layers)
    for name, (low, high) in (("layer", layer_range), ("head", (0, num_heads - 1))):
        if name in values and not low <= values[name] <= high:
            notes.append(f"The link's {name} {values.pop(name)} is out of range for {shown(model_key)}"
                         f"({low} to {high}); the default is used.")
    return LinkView(view.tab, values, tuple(notes))


def link_query(tab: str, values: dict | None = None) -> str:
    """The query string (``?tab=...&...``) that opens ``tab`` with ``values``."""
    found = _find_tab(tab)
    slug = found.slug if found else DEFAULT_TAB
    pairs = [("tab", slug)]
    for param in TAB_PARAMS[slug]:
        value = (values or {}).get(param.name)
        if value is None or (value in ("", ()) and param.name != "text_pair"):
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        elif isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        elif isinstance(value, float):
            value = f"{int(value)}" if value.is_integer() and param.kind == "int" else f"{value:g}"
        pairs.append((param.name, str(value)))
    return "?" + urlencode(pairs, quote_via=quote)


def notes_markdown(notes) -> str:
    """The notes as a Markdown list; every character that Markdown or HTML reads is escaped."""
    if not notes:
        return ""
    punctuation = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")
    lines = []
    for note in notes:
        text = note.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        lines.append("- " + punctuation.sub(r"\\\1", text))
    return "**This link was adjusted:**\n" + "\n".join(lines)
