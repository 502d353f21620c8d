"""Deep links in Chromium (network blocked): a link for each tab opens that tab with the
link's inputs in its boxes and the view computed from them; a hostile link puts nothing
on the page but a note; every tab shows a computed result on arrival; "Copy link to this
view" writes a link that opens the same view."""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

import pytest
from playwright.sync_api import expect

from components.lessons.copy import STEPS
from helpers import MLM_KEY, SLOW_TIMEOUT, open_section, page_tab, screenshot, sections_of
from models import fill_mask, first_capable, list_models, simulate_masking, tokenize
from test_xss_every_input import injected
from view_checks import DATA_MARKS, table_rows, wait_computed

BOX = {  # each tab's main text box, by its label
    "fill-mask": "Text with masks", "why-this-guess": "Text with a mask", "masking-lab": "Text to corrupt",
    "attention": "Text", "compare": "Text for every model", "fine-tuning-search": "Query",
}


def open_link(page, app_server, label, **params):
    """Open the link; wait until it has chosen its tab (``label``); the views are waited for
    by what they show."""
    page.goto(app_server + "?" + urlencode(params, quote_via=quote))
    expect(page_tab(page)).to_have_text(label, timeout=SLOW_TIMEOUT)
    return page.locator('[role="tabpanel"]:visible').first


def selected_tab(page) -> str:
    return page_tab(page).inner_text().strip()


def expect_box(panel, tab, value) -> None:
    """The tab's main text box holds ``value`` (set by the link: waited for)."""
    expect(panel.get_by_label(BOX[tab], exact=True).first).to_have_value(value, timeout=SLOW_TIMEOUT)


def test_fill_mask_link(page, app_server):
    text = "The sun is [MASK] today."
    panel = open_link(page, app_server, "Fill-mask", tab="fill-mask", text=text, top_k=3)
    assert selected_tab(page) == "Fill-mask"
    expect_box(panel, "fill-mask", text)
    table = page.locator("#fill-mask-table")
    expect(table.get_by_role("grid")).to_have_attribute("aria-rowcount", "4", timeout=SLOW_TIMEOUT)
    best = fill_mask(first_capable(None, "mlm"), text, 3).masks[0].predictions[0].token
    expect(table).to_contain_text(best)
    screenshot(page, "link-fill-mask")


def test_lesson_link(page, app_server):
    number = [s.slug for s in STEPS].index("attention") + 1
    open_link(page, app_server, "Lessons", lesson=str(number))
    assert selected_tab(page) == "Lessons"
    expect(page.locator("#lesson-step input").first).to_have_value(re.compile(rf"^{number}\. Attention"))
    group = page.locator(".lesson-attention").first
    expect(group.locator(".gtitle")).to_contain_text("layer 2, head 0", timeout=SLOW_TIMEOUT)
    assert wait_computed(group, 1)["plots"] == [True]


def test_why_this_guess_link(page, app_server):
    text = "The [MASK] barked at the postman."
    panel = open_link(page, app_server, "Why this guess", tab="why-this-guess", text=text)
    assert selected_tab(page) == "Why this guess"
    expect_box(panel, "why-this-guess", text)
    expect(page.locator("#attribution-curves").locator(DATA_MARKS).first).to_be_attached(timeout=SLOW_TIMEOUT)
    wait_computed(page.locator("#attribution-table"), tables=1)
    assert table_rows(page.locator("#attribution-table")) >= len(tokenize(first_capable(None, "mlm"), text).tokens)
    expect(page.locator("#attribution-tokens")).to_contain_text("barked")


def test_masking_lab_link(page, app_server):
    text = "Students read the long book in the quiet library every evening."
    panel = open_link(page, app_server, "Masking lab", tab="masking-lab", text=text, rate="0.5", seed="4")
    assert selected_tab(page) == "Masking lab"
    expect_box(panel, "masking-lab", text)
    expect(panel.get_by_role("spinbutton", name="number input for Selection rate")).to_have_value("0.5")
    key = panel.get_by_label(re.compile("^Model")).first.input_value()
    model = next(m.key for m in list_models() if m.display_name == key or m.key == key)
    sim = simulate_masking(model, text, 0.5, 0.8, 0.1, 0.1, False, 3, True, 4)
    counts = ", ".join(str(len(e.selected)) for e in sim.epochs)
    expect(panel).to_contain_text(f"selected per epoch: {counts}", timeout=SLOW_TIMEOUT)
    screenshot(page, "link-masking-lab")


def test_attention_link(page, app_server):
    text = "The bank was closed."
    panel = open_link(page, app_server, "Attention", tab="attention", text=text, text_pair="", layer=3, head=2)
    assert selected_tab(page) == "Attention"
    expect_box(panel, "attention", text)
    expect(page.locator("#attention-heatmap .gtitle")).to_contain_text("layer 3, head 2", timeout=SLOW_TIMEOUT)
    n = len(tokenize(first_capable(None, "attention"), text).tokens)
    expect(page.locator("#attention-status")).to_contain_text(f"{n} tokens")
    expect(panel.get_by_role("spinbutton", name="number input for Layer")).to_have_value("3")
    screenshot(page, "link-attention")


def test_embeddings_link(page, app_server):
    text = "A cat sleeps.\nA kitten naps.\n\nStocks fell.\nShares dropped."
    panel = open_link(page, app_server, "Embeddings", tab="embeddings", text=text, layer=2)
    assert selected_tab(page) == "Embeddings"
    assert panel.get_by_role("textbox", name=re.compile("^Sentences, one per line")).input_value() == text
    expect(page.locator("#embeddings-summary")).to_contain_text("4 sentences", timeout=SLOW_TIMEOUT)
    expect(page.locator("#embeddings-summary")).to_contain_text("layer 2")
    expect(panel.locator(".js-plotly-plot").first.locator(DATA_MARKS).first).to_be_attached(timeout=SLOW_TIMEOUT)


def test_compare_link(page, app_server):
    text = "Paris is the [MASK] of France."
    panel = open_link(page, app_server, "Compare", tab="compare", text=text, models=f"{MLM_KEY},minilm-mlm")
    assert selected_tab(page) == "Compare"
    expect_box(panel, "compare", text)
    chosen = page.locator("#compare-models")
    expect(chosen.get_by_label(MLM_KEY, exact=True)).to_be_checked()
    expect(chosen.get_by_label("minilm-mlm", exact=True)).to_be_checked()
    checked = chosen.locator("input:checked").count()
    assert checked == 2
    side = page.locator("#compare-fill-mask")
    expect(side).to_contain_text(MLM_KEY, timeout=SLOW_TIMEOUT)
    expect(side).to_contain_text("minilm-mlm")


def test_fine_tuning_search_link(page, app_server):
    panel = open_link(page, app_server, "Fine-tuning & search", tab="fine-tuning-search", text="A storm at sea.", k=3)
    assert selected_tab(page) == "Fine-tuning & search"
    expect_box(panel, "fine-tuning-search", "A storm at sea.")
    expect(page.locator("#search-note")).to_contain_text("3 hits", timeout=SLOW_TIMEOUT)


@pytest.mark.parametrize("tab,label", [("pre-training", "Pre-training"), ("models", "Models"),
                                       ("pretrain", "Pre-training"), ("finetune", "Fine-tuning & search")])
def test_tabs_without_inputs_and_by_their_ids(page, app_server, tab, label):
    panel = open_link(page, app_server, label, tab=tab)
    assert selected_tab(page) == label
    wait_computed(panel)
    expect(page.locator("#link-note")).to_have_text("")


def test_hostile_link_shows_a_note_and_nothing_injected(page, app_server):
    payload = '<img src=x id=xss-injected onerror="window.__xss=1;alert(1)">'
    panel = open_link(page, app_server, "Fill-mask", tab="<script>window.__xss=1</script>", text=payload,
                      model="<b>x</b>", top_k="1e9", zzz="<svg onload=alert(1)>")
    assert selected_tab(page) == "Fill-mask"
    note = page.locator("#link-note")
    expect(note).to_contain_text("is not a tab of this app", timeout=SLOW_TIMEOUT)
    expect(note).to_contain_text("contained markup")
    expect(note).to_contain_text("is not one this app knows")
    expect(note).to_contain_text("out of range")
    expect_box(panel, "fill-mask", "The capital of France is [MASK].")  # the default text
    expect(page.locator("#fill-mask-table").get_by_role("grid")).to_have_attribute("aria-rowcount", "6",
                                                                                   timeout=SLOW_TIMEOUT)
    assert note.locator("img, script, svg, b").count() == 0
    assert injected(page) == [] and page.dialogs == []
    assert page.external_requests == []
    screenshot(page, "link-hostile")


# each tab's main view (the rest of its charts: data, or a message saying which button fills them)
ARRIVAL = {
    "Fill-mask": "#fill-mask-table", "Lessons": ".lesson-encoder-vs-decoder", "Why this guess": "#attribution-table",
    "Masking lab": "#masking-strips", "Attention": "#attention-heatmap",
    "Inside one layer": "#inside-checks", "Which parts matter": "#parts-knockout-table",
    "Embeddings": "#embeddings-summary",
    "Compare": "#compare-fill-mask", "Pre-training": None, "Fine-tuning & search": "#search-note", "Models": None,
    "Class": "#class-status",
}


# sections whose view waits for its button (bertviz draws on request; timing and the masking
# rates are longer jobs; a class round's chart is drawn once the teacher opens a round)
BY_BUTTON = {"bertviz", "Speed vs length", "Check the numbers", "Class"}
# views of text or HTML, no chart or table (a tab's first section by the tab's name): the element
# that shows them
TEXT_VIEWS = {"Masking lab": "#masking-strips .tok", "Sentence pairs": "#masking-pair-answer"}


def test_every_tab_shows_a_result_on_arrival(page):
    expect(page.get_by_role("tab").nth(len(ARRIVAL) - 1)).to_be_visible(timeout=SLOW_TIMEOUT)
    names = [t.inner_text().strip() for t in page.get_by_role("tab").all()]
    assert names == list(ARRIVAL)
    for name in names:
        page.get_by_role("tab", name=name, exact=True).click()
        panel = page.locator('[role="tabpanel"]:visible').first
        main = ARRIVAL[name]
        if main:
            expect(page.locator(main).first).not_to_be_empty(timeout=SLOW_TIMEOUT)
        # drawn: a chart with data or a table with rows (Plotly draws a moment after the answer)
        for section in [""] + sections_of(name)[1:]:  # then each further section as it opens
            if section:
                open_section(page, section)
            if (section or name) in TEXT_VIEWS:
                expect(page.locator(TEXT_VIEWS[section or name]).first).not_to_be_empty(timeout=SLOW_TIMEOUT)
            elif (section or name) not in BY_BUTTON:
                wait_computed(panel)
            for plot in [p for p in panel.locator(".js-plotly-plot").all() if p.is_visible()]:
                # no empty chart: data, or a message saying which button fills it
                filled = plot.locator(f"{DATA_MARKS}, .annotation-text:has-text('Press')").first
                expect(filled).to_be_attached(timeout=SLOW_TIMEOUT)
            screenshot(page, "arrival-" + re.sub(r"\W+", "-", f"{name} {section}".lower()).strip("-"))
    assert page.external_requests == []


def test_copy_link_writes_the_view_on_screen(page, app_server, browser):
    open_link(page, app_server, "Attention", tab="attention", text="Rivers have banks.", text_pair="", layer=1, head=4)
    expect(page.locator("#attention-heatmap .gtitle")).to_contain_text("layer 1, head 4", timeout=SLOW_TIMEOUT)
    page.get_by_role("button", name="Link to this view").click()  # the folded link bar, opened
    page.get_by_role("button", name="Copy link to this view", exact=True).click()
    box = page.locator("#view-link textarea, #view-link input").first
    expect(box).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/\?tab=attention&"), timeout=SLOW_TIMEOUT)
    link = box.input_value()
    assert "text=Rivers%20have%20banks." in link and "layer=1" in link and "head=4" in link
    again = browser.new_page()
    try:
        again.goto(link)
        expect(again.locator("#attention-heatmap .gtitle")).to_contain_text("layer 1, head 4", timeout=SLOW_TIMEOUT)
        # the status names no layer or head (the title does; later clicks change only the title)
        expect(again.locator("#attention-status")).to_contain_text("tokens")
        expect(again.locator("#attention-status")).not_to_contain_text("layer 0")
    finally:
        again.close()
    # a tab clicked afterwards: the link names it (the page notes the tab itself, no request)
    page.get_by_role("tab", name="Masking lab", exact=True).click()
    page.get_by_role("button", name="Copy link to this view", exact=True).click()
    expect(box).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/\?tab=masking-lab(&|$)"), timeout=SLOW_TIMEOUT)
