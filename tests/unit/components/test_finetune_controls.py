"""The Fine-tuning & search tab's controls, as built (no browser): defaults that the core accepts."""

from __future__ import annotations

import gradio as gr
import pytest

from models import train_classifier, train_pair_classifier


@pytest.fixture(scope="module")
def demo():
    from components.finetune.tab import build_finetune_tab

    with gr.Blocks() as blocks, gr.Tabs():
        build_finetune_tab()
    return blocks


def _handler(demo, component, event: str):
    (dep,) = [d for d in demo.config["dependencies"] if (component._id, event) in d["targets"]]
    return demo.fns[dep["id"]].fn


def _blocks(demo, kind, label: str) -> list:
    return [b for b in demo.blocks.values() if isinstance(b, kind) and b.label == label]


@pytest.mark.parametrize("section", ["head", "pair"])
def test_unticking_freeze_sets_epochs_the_core_accepts_and_its_own_default(demo, section):
    """The probe's default epochs (30, 60) are above fine-tuning's limit (5, 3): unticking
    'Freeze' left them, an error one click from the defaults. Ticking it gives the probe's
    default back. Both against what the core does with no epochs given."""
    prefix = "Freeze the encoder (a probe: seconds)" if section == "head" else "Freeze the encoder (a probe)"
    (freeze,) = _blocks(demo, gr.Checkbox, prefix)
    follow = _handler(demo, freeze, "input")
    train = ((lambda **kw: train_classifier("mini-bert", "source", train_size=16, **kw)) if section == "head"
             else (lambda **kw: train_pair_classifier("mini-bert", "same-source", train_size=16, **kw)))
    for frozen in (False, True):
        epochs = follow(frozen)
        assert train(freeze=frozen, epochs=epochs).epochs == epochs == train(freeze=frozen).epochs


def test_the_pair_section_opens_on_a_task_a_small_probe_reads_and_its_example(demo):
    from components.finetune import sentence_copy as copy

    (task,) = _blocks(demo, gr.Dropdown, "Pair task")
    (a,) = _blocks(demo, gr.Textbox, "A")
    (b,) = _blocks(demo, gr.Textbox, "B")
    assert task.value == "same-source" and (a.value, b.value) == copy.PAIR_EXAMPLES["same-source"]
    swap = _handler(demo, task, "input")
    assert swap("definition-match", a.value, b.value) == copy.PAIR_EXAMPLES["definition-match"]
    kept = swap("definition-match", "my own A", b.value)  # text of the user's own stays
    assert all(isinstance(x, dict) and x.get("__type__") == "update" and len(x) == 1 for x in kept)
