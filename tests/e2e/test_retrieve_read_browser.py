"""Retrieve, then read in Chromium (network blocked): the lesson step opened from its deep link in
projector mode, computed on arrival (the passages table, the cost chart, the answer), its
check-yourself answer hidden until asked; then a question of one's own recomputed."""

from __future__ import annotations

from playwright.sync_api import expect

from components.lessons import copy
from helpers import SLOW_TIMEOUT, page_tab, screenshot
from view_checks import wait_computed

SLUG = "retrieve-then-read"


def test_the_step_opens_from_its_deep_link_and_answers_a_question(page, app_server):
    number = [s.slug for s in copy.STEPS].index(SLUG) + 1
    step = copy.STEPS[number - 1]
    page.goto(f"{app_server}?tab=lessons&lesson={SLUG}&projector=1")
    expect(page_tab(page)).to_have_text("Lessons", timeout=SLOW_TIMEOUT)
    expect(page.locator("#lesson-text")).to_contain_text(f"Step {number} of {len(copy.STEPS)}: {step.title}",
                                                         timeout=SLOW_TIMEOUT)
    expect(page.get_by_role("button", name="Projector")).to_have_attribute("aria-pressed", "true")
    group = page.locator(f".lesson-{SLUG}").first
    found = wait_computed(group, 1, 1)
    assert found["plots"] == [True] and found["tables"][0] == 3  # k = 3 passages read
    expect(group).to_contain_text("Answer: Nairobi", timeout=SLOW_TIMEOUT)
    expect(group).to_contain_text("read the passages")
    expect(group.get_by_text(step.answer[:40])).to_be_hidden()
    group.get_by_text(f"Check yourself: {step.question}").click()
    expect(group.get_by_text(step.answer[:40])).to_be_visible()
    screenshot(page, "lesson-retrieve-then-read")

    group.get_by_label("Question", exact=True).fill("Where does Iceland's government sit?")
    group.get_by_role("button", name="Recompute", exact=True).click()
    expect(group).to_contain_text("Answer: Reykjavik", timeout=SLOW_TIMEOUT)
    assert page.external_requests == []
