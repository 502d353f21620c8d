"""A class round in Chromium (every non-local host blocked): a teacher and two students.

The teacher opens a round in the Class tab; two students open its link on phone-sized
pages (just the sentence and one box), send, one changes their guess, one types markup
(refused, shown as text); the teacher's view counts them within seconds, hides a guess,
reveals the model's answer, exports the CSV, and after a reload still holds the round (the
token kept in the browser). The students' pages then show both distributions. axe finds no
serious violation on either page, in both themes and in projector mode.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from playwright.sync_api import expect

from components.class_rounds import copy
from helpers import TIMEOUT, screenshot, settle, track_app_calls
from test_present_browser import axe_source, serious_violations, wait_drawn
from test_xss_every_input import injected

SENTENCE = "The students opened their [MASK] and started to write."
PHONE = {"width": 390, "height": 844}


def student_page(browser, link: str):
    """A phone-sized page on the round's link, recording any request that leaves the machine."""
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.external_requests, page.dialogs = [], []
    page.on("request", lambda r: page.external_requests.append(r.url)
            if r.url.split("/")[2].split(":")[0] not in ("127.0.0.1", "localhost") else None)
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    track_app_calls(page)
    page.goto(link)
    expect(page.locator("#round-sentence")).to_contain_text("The students opened their", timeout=TIMEOUT)
    return page


def send(page, word: str) -> None:
    page.get_by_label(copy.GUESS_LABEL).fill(word)
    page.get_by_role("button", name=copy.SEND, exact=True).click()


def open_class_round(page, query: str = "") -> str:
    """The teacher opens a round in the Class tab (``query``: the display's link parameters); its link."""
    page.goto(page.url.split("?")[0] + "?tab=class" + query)
    expect(page.locator("#class-status")).to_contain_text(copy.NO_ROUND, timeout=TIMEOUT)
    page.get_by_label(copy.SENTENCE_LABEL).fill(SENTENCE)
    page.get_by_role("button", name=copy.OPEN, exact=True).click()
    expect(page.locator("#class-board .class-code")).to_have_text(re.compile(r"^[A-Z0-9]{6}$"), timeout=TIMEOUT)
    link = page.get_by_label(copy.LINK_LABEL).input_value()
    assert link.endswith("?round=" + page.locator("#class-board .class-code").inner_text())
    return link


def test_a_round_played_by_a_teacher_and_two_students(page, browser, tmp_path):
    link = open_class_round(page)
    ada, bo = student_page(browser, link), student_page(browser, link)
    expect(ada.get_by_role("tab", name="Fill-mask")).to_be_hidden()  # the round alone: no tabs to scroll past
    expect(ada.get_by_label(copy.GUESS_LABEL)).to_be_visible()

    send(ada, "books")
    expect(ada.locator("#round-answer")).to_contain_text("Sent", timeout=TIMEOUT)
    send(bo, "<b>pens</b>")  # markup: refused, said why, nothing stored
    expect(bo.get_by_text("markup", exact=False).first).to_be_visible(timeout=TIMEOUT)
    send(bo, "BOOKS")
    expect(bo.locator("#round-answer")).to_contain_text("books", timeout=TIMEOUT)
    status = page.locator("#class-status")
    expect(status).to_contain_text("2 students have answered", timeout=5_000)  # the timer's refresh
    send(ada, "notebooks")  # a change, not a third student
    expect(ada.locator("#round-answer")).to_contain_text("Changed", timeout=TIMEOUT)
    expect(page.get_by_label(copy.HIDE_LABEL)).to_be_visible()
    wait_for_bars(page, 2)  # books and notebooks
    expect(status).to_contain_text("2 students have answered")

    page.get_by_label(copy.HIDE_LABEL).click()
    page.get_by_role("option", name="notebooks").click()
    page.get_by_role("button", name=copy.HIDE, exact=True).click()
    expect(status).to_contain_text("1 hidden from the screen", timeout=TIMEOUT)
    page.get_by_role("button", name=copy.REVEAL, exact=True).click()
    expect(status).to_contain_text("average −log p", timeout=TIMEOUT)
    expect(page.locator("#class-chart .gtitle, #class-chart .annotation-text").filter(has_text="The model")
           ).to_have_count(1, timeout=TIMEOUT)
    settle(page)
    screenshot(page, "class-round")

    with page.expect_download(timeout=TIMEOUT) as download:
        page.get_by_role("button", name=copy.EXPORT, exact=True).click()
    frame = pd.read_csv(download.value.path())
    assert frame.loc[frame.source == "class", "word"].tolist() == ["books"]  # the hidden guess stays off
    assert (frame.source == "model").sum() == 10

    for student in (ada, bo):  # the answer reaches each phone within the page's two-second poll
        expect(student.locator("#round-chart .gtitle, #round-chart .annotation-text")
               .filter(has_text="The model")).to_have_count(1, timeout=TIMEOUT)
        expect(student.locator("#round-answer")).to_contain_text("average −log p")
    screenshot(ada, "class-round-student")

    code = page.locator("#class-board .class-code").inner_text()
    page.reload()  # the token survives in the browser's storage
    page.get_by_role("tab", name="Class", exact=True).click()
    expect(page.locator("#class-board .class-code")).to_have_text(code, timeout=TIMEOUT)
    page.get_by_role("button", name=copy.CLOSE, exact=True).click()
    expect(status).to_contain_text(f"Round {code} is closed", timeout=TIMEOUT)
    expect(page.get_by_text("Wrong teacher token")).to_have_count(0)
    for p in (page, ada, bo):
        assert injected(p) == [] and p.dialogs == [] and p.external_requests == []
    ada.context.close()
    bo.context.close()


def wait_for_bars(page, n: int) -> None:
    expect(page.locator("#class-chart .barlayer .point")).to_have_count(n, timeout=TIMEOUT)


@pytest.mark.parametrize("query", ["", "&dark=1", "&projector=1", "&projector=1&dark=1"],
                         ids=["light", "dark", "projector", "projector-dark"])
def test_axe_finds_no_serious_violation_on_the_class_pages(page, browser, query):
    link = open_class_round(page, query)
    student = student_page(browser, link + query)
    send(student, "books")
    expect(student.locator("#round-answer")).to_contain_text("Sent", timeout=TIMEOUT)
    wait_for_bars(page, 1)
    report = {}
    for name, p in (("teacher", page), ("student", student)):
        settle(p)
        wait_drawn(p)
        p.add_script_tag(content=axe_source())
        report[name] = serious_violations(p)
    page.get_by_role("button", name=copy.REVEAL, exact=True).click()
    expect(student.locator("#round-chart .barlayer .point").first).to_be_attached(timeout=TIMEOUT)
    for name, p in (("teacher revealed", page), ("student revealed", student)):
        settle(p)
        wait_drawn(p)
        report[name] = serious_violations(p)
    assert all(not found for found in report.values()), report
    assert page.external_requests == [] and student.external_requests == []
    student.context.close()
