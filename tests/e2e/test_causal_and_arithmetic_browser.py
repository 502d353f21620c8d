"""Issue 15's views in Chromium: the causal toggles, generating with an encoder, the loss
arithmetic, token + position + segment, and max pooling; a screenshot of each."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from helpers import SLOW_TIMEOUT, open_section, screenshot
from models import fill_mask, generate_left_to_right
from models.registry.catalogue import default_model_key


def test_fill_mask_causal_and_generation(page):
    filled = page.get_by_label("Sentence with the top prediction in place")
    expect(filled).to_have_value(re.compile(r"^The capital of France is \S+\.$"), timeout=SLOW_TIMEOUT)
    text = "The [MASK] sat on the mat."
    page.get_by_label("Text with masks").fill(text)
    page.locator("#fill-mask-causal input").check()
    page.get_by_role("button", name="Predict", exact=True).click()
    expect(page.locator("#fill-mask-status")).to_contain_text("causal mask", timeout=SLOW_TIMEOUT)
    top = fill_mask(default_model_key(), text, causal=True).masks[0].predictions[0].token
    expect(filled).to_have_value(f"The {top} sat on the mat.", timeout=SLOW_TIMEOUT)
    expect(page.get_by_text("14.0 %", exact=False).first).to_be_visible()

    page.get_by_label("Prompt to continue").fill("The weather today is")
    page.get_by_role("button", name="Generate with an encoder", exact=True).click()
    expected = generate_left_to_right(default_model_key(), "The weather today is", 8, 0, 5)
    expect(page.get_by_label("Generated text")).to_have_value(expected.text, timeout=SLOW_TIMEOUT)
    steps = page.locator("#generation-steps")
    expect(steps).to_contain_text("[MASK] [SEP]")
    page.locator("#generation-steps").scroll_into_view_if_needed()
    screenshot(page, "fill-mask-causal-generation")
    assert page.external_requests == [] and page.dialogs == []


def test_attention_causal_and_input_embeddings(page):
    page.get_by_role("tab", name="Attention").click()
    status = page.locator("#attention-status")
    expect(status).to_contain_text("17 tokens", timeout=SLOW_TIMEOUT)
    page.locator("#attention-causal input").check()
    expect(status).to_contain_text("Causal mask added", timeout=SLOW_TIMEOUT)
    expect(page.locator("#attention-heatmap .hm image").first).to_be_attached(timeout=SLOW_TIMEOUT)
    page.locator("#attention-heatmap").scroll_into_view_if_needed()
    screenshot(page, "attention-causal")

    open_section(page, "Token + position + segment")
    page.get_by_role("button", name="Show token + position + segment", exact=True).click()
    summary = page.locator("#input-embeddings-summary")
    expect(summary).to_contain_text("The sum of the vectors equals", timeout=SLOW_TIMEOUT)
    expect(summary).to_contain_text("cosine")  # the example is a pair: two segment vectors
    expect(page.locator("#input-embeddings-plot .heatmaplayer")).to_have_count(4, timeout=SLOW_TIMEOUT)
    page.locator("#input-embeddings-plot").scroll_into_view_if_needed()
    screenshot(page, "attention-input-embeddings")
    assert page.external_requests == [] and page.dialogs == []


def test_masking_lab_arithmetic(page):
    page.get_by_role("tab", name="Masking lab").click()
    open_section(page, "The MLM loss")
    page.get_by_role("button", name="Show the arithmetic", exact=True).click()
    text = page.locator("#arithmetic-text")
    expect(text).to_contain_text("0.7468", timeout=SLOW_TIMEOUT)
    expect(text).to_contain_text("0.2919 nats")
    expect(page.locator("#arithmetic-table")).to_contain_text("cat ← target")

    page.get_by_role("radio", name="a real position").check()
    page.get_by_role("button", name="Show the arithmetic", exact=True).click()
    expect(text).to_contain_text("Position", timeout=SLOW_TIMEOUT)
    expect(page.locator("#arithmetic-table")).to_contain_text("the other", timeout=SLOW_TIMEOUT)
    page.locator("#arithmetic-table").scroll_into_view_if_needed()
    screenshot(page, "masking-lab-arithmetic")
    assert page.external_requests == [] and page.dialogs == []


def test_embeddings_max_pooling(page):
    page.get_by_role("tab", name="Embeddings").click()
    expect(page.get_by_text("Max pooling and padding.", exact=True)).to_be_visible()
    page.get_by_role("button", name="Compare [CLS], mean and max pooling", exact=True).click()
    titles = page.locator(".js-plotly-plot .annotation-text")  # the three subplot titles
    expect(titles.filter(has_text="max pooling, layer 6")).to_have_count(1, timeout=SLOW_TIMEOUT)
    expect(titles.filter(has_text="pooling, layer 6")).to_have_count(3)
    expect(page.get_by_role("gridcell", name="max pooling", exact=True)).to_be_visible()
    screenshot(page, "embeddings-max-pooling")
    assert page.external_requests == [] and page.dialogs == []
