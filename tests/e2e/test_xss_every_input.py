"""XSS sweep: a payload typed into every text input of every tab, every action clicked.

Whatever the views do with it (tables, Plotly labels, HTML strips, iframes, error toasts),
the payload must stay text: no dialog fires, no script runs, no element is injected, in
the page or in any frame.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from helpers import open_section, screenshot, sections_of, settle

PAYLOAD = (
    '<img src=x id=xss-injected onerror="window.__xss=1;alert(1)"> The [MASK] bank '
    "<script>window.__xss=2;alert(2)</script><svg onload=alert(3)></svg> river."
)
# Actions that start long runs or change nothing the payload reaches.
SKIP = re.compile(r"train|stop|benchmark|time forward|random|clear|download|export|refresh|probe every"
                  r"|with exact search", re.I)  # the last two: minutes of CPU, their outputs are numbers


def injected(page) -> list[str]:
    found = []
    for frame in page.frames:
        try:
            hit = frame.evaluate(
                "() => [window.__xss ?? null,"
                " document.querySelectorAll('#xss-injected, img[src=\"x\"], svg[onload]').length]"
            )
        except Exception:  # noqa: BLE001  (a frame navigating away has nothing left to check)
            continue
        if hit[0] is not None or hit[1]:
            found.append(f"{frame.url or 'about:srcdoc'}: {hit}")
    return found


def click_if_there(button) -> int:
    """Click ``button``; 0 when an earlier answer redrew it away or disabled it."""
    try:
        if not (button.is_visible() and button.is_enabled()):
            return 0
        try:
            button.click(timeout=5_000)
        except PlaywrightTimeout:  # covered (an error toast) or moved by an earlier answer
            button.dispatch_event("click", timeout=2_000)
        return 1
    except PlaywrightTimeout:  # gone by the time it was reached
        return 0


# thirteen tabs and their sections, every action: past the suite's 600 s on a loaded 2-core machine
@pytest.mark.timeout(1200)
def test_payload_stays_text_everywhere(page_on_own_app):
    # an app of its own: the sweep clicks every action of every tab, so it must not queue
    # behind work earlier tests left on the shared server (nor leave any for later ones)
    page = page_on_own_app
    expect(page.get_by_role("tab").nth(8)).to_be_visible(timeout=60_000)  # all nine tabs drawn
    tabs = [t.inner_text().strip() for t in page.get_by_role("tab").all()]
    clicked = 0
    assert len(tabs) >= 4, tabs
    for name, section in [(name, section) for name in tabs for section in sections_of(name) or [""]]:
        started = time.monotonic()
        page.get_by_role("tab", name=name, exact=True).click()
        if section:  # the tab's sub-tabs, each swept on its own
            open_section(page, section)
        panel = page.locator('[role="tabpanel"]:visible').first
        for box in panel.get_by_role("textbox").all():
            if box.is_visible() and box.is_editable():
                box.fill(PAYLOAD)
        # The fill-mask strip's words are buttons too, one per word of the payload, each click
        # masking one more: one of them is clicked here, not forty (they piled up some ninety
        # queued edits, and a CI run's answers to them had not all arrived after 300 s)
        if name == "Fill-mask":  # the strip redrawn from the payload: one of its words masked
            word = panel.locator("#fill-mask-words").get_by_role("button", name="bank", exact=True)
            expect(word).to_be_visible(timeout=60_000)
            clicked += click_if_there(word)
        # the labels first: an answer may redraw part of the panel while the sweep clicks,
        # so a handle taken before the first click can point at a button that is gone
        labels = panel.get_by_role("button").evaluate_all(
            "els => els.filter(b => b.offsetParent !== null && !b.disabled && !b.closest('#fill-mask-words'))"
            ".map(b => b.innerText.trim())")
        for label in dict.fromkeys(labels):
            if not label or SKIP.search(label):
                continue
            for button in panel.get_by_role("button", name=label, exact=True).all():
                clicked += click_if_there(button)
        settle(page)  # every answer has arrived and been drawn: all of them are inspected
        print(f"{name} / {section or '-'}: {time.monotonic() - started:.1f}s")
        assert injected(page) == [], name
        assert page.dialogs == [], (name, page.dialogs)
        slug = re.sub(r"\W+", "-", f"{name} {section}".lower()).strip("-")
        screenshot(page, f"xss-{slug}")
    assert clicked >= 20, clicked  # the sweep reached the actions, not only the boxes
    assert page.external_requests == []


def test_payload_stays_text_on_a_class_rounds_page(page, app_server):
    """A round's page (?round=CODE): the teacher's sentence and a student's guess are the payload."""
    from components.class_rounds import copy as class_copy
    from helpers import MLM_KEY
    from models import open_round, reveal_round, submit_guess

    ticket = open_round(PAYLOAD, MLM_KEY)  # in the database the app reads (tests/conftest.py)
    submit_guess(ticket.code, "river&bank", "xss-student-1")  # an ampersand is a word's, never markup
    page.goto(app_server + "?round=" + ticket.code)
    expect(page.locator("#round-sentence")).to_contain_text("<script>window.__xss=2", timeout=60_000)
    box = page.get_by_label(class_copy.GUESS_LABEL)
    for guess, refusal in [(PAYLOAD, "limit is 40"), ("<svg/onload=alert(3)>", "markup"), ("two words", "more than one word"),
                           ("&lt;img&gt;", "markup")]:
        box.fill(guess)
        page.get_by_role("button", name=class_copy.SEND, exact=True).click()
        expect(page.get_by_text(refusal).first).to_be_visible(timeout=60_000)
    reveal_round(ticket.code, ticket.teacher_token)
    expect(page.locator("#round-chart .barlayer .point").first).to_be_attached(timeout=60_000)
    expect(page.locator("#round-chart")).to_contain_text("river&bank")
    settle(page)
    assert injected(page) == [] and page.dialogs == []
    assert page.external_requests == []
    screenshot(page, "xss-class-round")
