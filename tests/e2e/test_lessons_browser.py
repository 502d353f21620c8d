"""The Lessons tab in Chromium (network blocked): walked from the first step to the last with
Next, each step's view already computed when shown (charts with data, tables with rows),
one screenshot per step; a step recomputed from its edited inputs; the answer revealed on
demand; a step jumped to from the selector."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from components.lessons import before_bert_copy, copy
from helpers import SLOW_TIMEOUT, screenshot
from models import first_capable, static_vs_contextual
from view_checks import computed, wait_computed

# charts and tables each step's view holds (components.lessons.tab.VIEWS); the token strip of
# the masking step is HTML, checked by its text
EXPECTED = {
    "encoder-vs-decoder": (3, 0), "before-bert": (2, 2), "tokens-embeddings": (1, 1), "attention": (1, 0),
    "knock-out-a-head": (1, 0), "answer-across-layers": (1, 1), "masking": (0, 0),
    "mlm-loss": (0, 2), "nsp": (0, 1), "variants": (1, 2), "pooling-retrieval": (1, 2), "fine-tuning": (1, 0),
    "sentence-encoder": (2, 0), "sentence-pairs": (1, 0), "span-head": (1, 0), "retrieve-then-read": (1, 1),
    "distillation": (1, 0),
}
LAST = len(copy.STEPS)
ATTENTION = [s.slug for s in copy.STEPS].index("attention") + 1  # the step's number in the lesson


def step_group(page, slug):
    return page.locator(f".lesson-{slug}").first


def open_lessons(page):
    tab = page.get_by_role("tab", name="Lessons", exact=True)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=SLOW_TIMEOUT)
    expect(page.locator("#lesson-text")).to_contain_text(f"Step 1 of {LAST}", timeout=SLOW_TIMEOUT)


def test_walk_the_lesson_from_first_to_last_step(page):
    open_lessons(page)
    previous = page.get_by_role("button", name="← Previous", exact=True)
    expect(previous).to_be_disabled()
    for number, step in enumerate(copy.STEPS, 1):
        if number > 1:
            page.get_by_role("button", name="Next →", exact=True).click()
        expect(page.locator("#lesson-text")).to_contain_text(f"Step {number} of {LAST}: {step.title}", timeout=SLOW_TIMEOUT)
        group = step_group(page, step.slug)
        expect(group).to_be_visible()
        for other in copy.STEPS:  # one step's view at a time
            if other.slug != step.slug:
                expect(step_group(page, other.slug)).to_be_hidden()
        plots, tables = EXPECTED[step.slug]
        if plots or tables:
            wait_computed(group, plots, tables)
        found = computed(group)
        assert found["plots"] == [True] * plots, (step.slug, found)
        assert len(found["tables"]) >= tables and all(rows > 0 for rows in found["tables"][:tables]), (step.slug, found)
        if step.slug == "masking":
            expect(group).to_contain_text("MASK", timeout=SLOW_TIMEOUT)  # the strip marks the masked tokens in text too
        if step.slug in ("fine-tuning", "sentence-encoder", "span-head", "distillation"):
            expect(group).to_contain_text(re.compile("held-out", re.IGNORECASE), timeout=SLOW_TIMEOUT)
        if step.slug == "sentence-pairs":
            expect(group).to_contain_text("majority baseline", timeout=SLOW_TIMEOUT)
        # the question is there, its answer hidden until asked for
        question = group.get_by_text(f"Check yourself: {step.question}")
        expect(question).to_be_visible()
        expect(group.get_by_text(step.answer[:40])).to_be_hidden()
        screenshot(page, f"lesson-{number}-{step.slug}")
    expect(page.get_by_role("button", name="Next →", exact=True)).to_be_disabled()
    question = step_group(page, copy.STEPS[-1].slug).get_by_text(f"Check yourself: {copy.STEPS[-1].question}")
    question.click()
    expect(step_group(page, copy.STEPS[-1].slug).get_by_text(copy.STEPS[-1].answer[:40])).to_be_visible()
    previous.click()
    expect(page.locator("#lesson-text")).to_contain_text(f"Step {LAST - 1} of {LAST}", timeout=SLOW_TIMEOUT)
    # every step's view has been drawn: no element id twice on the page (a group's elem_id was).
    # Plotly's are left out: each chart's modebar logo is an SVG with <g id="symbol">, and each
    # plotly.js copy adds a <style id="plotly.js-style-global">.
    repeated = page.evaluate("""() => { const seen = {};
        for (const e of document.querySelectorAll('[id]:not(svg *):not(style)'))
            if (e.id) seen[e.id] = (seen[e.id] || 0) + 1;
        return Object.keys(seen).filter(id => seen[id] > 1); }""")
    assert repeated == []
    assert page.external_requests == []


def test_jump_to_a_step_and_recompute_it(page):
    open_lessons(page)
    page.locator("#lesson-step input").first.click()
    page.get_by_role("option", name=re.compile(rf"^{ATTENTION}\. Attention")).click()
    expect(page.locator("#lesson-text")).to_contain_text(f"Step {ATTENTION} of {LAST}", timeout=SLOW_TIMEOUT)
    group = step_group(page, "attention")
    expect(group.locator(".gtitle")).to_contain_text("layer 2, head 0", timeout=SLOW_TIMEOUT)
    text = group.get_by_label("Text", exact=True)
    text.fill("The river bank flooded.")
    head = group.get_by_role("spinbutton", name="number input for Head")
    head.fill("3")
    head.press("Enter")
    group.get_by_role("button", name="Recompute", exact=True).click()
    expect(group.locator(".gtitle")).to_contain_text("layer 2, head 3", timeout=SLOW_TIMEOUT)
    expect(group).to_contain_text("flooded")
    assert wait_computed(group, 1)["plots"] == [True]
    screenshot(page, "lesson-attention-recomputed")


def test_before_bert_opens_from_its_deep_link_in_projector_mode(page, app_server):
    """``?lesson=before-bert&projector=1``: the step computed on arrival (the core's own figures in
    its note), the timeline beside its chart, charts in projector type; then a word recomputed."""
    page.goto(app_server + "?lesson=before-bert&projector=1")
    number = [s.slug for s in copy.STEPS].index("before-bert") + 1
    title = copy.STEPS[number - 1].title
    expect(page.locator("#lesson-text")).to_contain_text(f"Step {number} of {LAST}: {title}", timeout=SLOW_TIMEOUT)
    expect(page.get_by_role("button", name="Projector")).to_have_attribute("aria-pressed", "true")
    group = step_group(page, "before-bert")
    found = wait_computed(group, 2, 2)
    assert found["plots"] == [True, True] and found["tables"][:2] == [8, 8]
    result = static_vs_contextual("bank", model_key=first_capable(None, "mlm"))
    expect(group).to_contain_text(f"{result.within[-1]:.3f}", timeout=SLOW_TIMEOUT)
    expect(group).to_contain_text(f"{result.across[-1]:.3f}")
    expect(group).to_contain_text("ELMo")
    expect(group).to_contain_text("bank.n.09213565")
    font = group.locator(".js-plotly-plot").first.evaluate("gd => gd._fullLayout.font.size")
    assert font >= 20  # the projector's chart type
    screenshot(page, "lesson-before-bert-projector")
    word = group.get_by_role("textbox").first  # the word's box, then the sentences'
    expect(word).to_have_value(before_bert_copy.WORD)
    word.fill("cell")
    group.get_by_role("button", name="Recompute", exact=True).click()
    expect(group.locator(".gtitle").first).to_contain_text("“cell”", timeout=SLOW_TIMEOUT)
    expect(group).to_contain_text("prison room")
    assert page.external_requests == []
