"""A model or head built by one visitor's request while another visitor's model loads.

``from_pretrained`` changes process-wide state while it builds: torch's default dtype becomes the
load's (float16 on a GPU) and ``PreTrainedModel.tie_weights`` is a no-op. A tiny BERT or a task
head built on another thread meanwhile would come out in float16, or with its decoder untied from
the word embeddings. Here a thread holds ``BUILD_LOCK`` in exactly the state a GPU load is in
while the other request runs; the result must equal the same call made alone.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from transformers.initialization import no_tie_weights
from transformers.modeling_utils import local_torch_dtype

from models import train_classifier, train_tiny
from models.runtime.loading import BUILD_LOCK

SENTENCES = ["The cat sat on the mat.", "She opened the door and walked in.",
             "I drink a cup of tea every morning.", "The river runs to the sea."] * 8


@contextmanager
def another_visitor_loading(seconds: float = 1.5):
    """While inside: another thread is half-way through a float16 ``from_pretrained`` (as ``_load``
    runs it on a GPU, under ``BUILD_LOCK``) for ``seconds``."""
    inside = threading.Event()

    def load():
        with BUILD_LOCK, local_torch_dtype(torch.float16, "BertModel"), no_tie_weights():
            inside.set()
            time.sleep(seconds)

    thread = threading.Thread(target=load)
    thread.start()
    assert inside.wait(10)
    try:
        yield
    finally:
        thread.join()


def _tiny_losses():
    return [e.loss for e in train_tiny(steps=3, seed=0, batch_size=8, sentences=SENTENCES) if e.step]


def test_a_tiny_bert_trained_while_another_model_loads_is_the_one_trained_alone():
    alone = _tiny_losses()
    with another_visitor_loading():
        during = _tiny_losses()
    assert during == alone


@pytest.mark.parametrize("settings", [dict(pooling="mean", epochs=3), dict(freeze=False, epochs=1, train_size=16)],
                         ids=["probe", "fine-tuned"])
def test_a_head_trained_while_another_model_loads_is_the_one_trained_alone(settings):
    def trained():
        r = train_classifier("mini-bert", "fiction-speech", seed=0, **settings)
        return r.train_loss, r.validation_accuracy

    alone = trained()
    with another_visitor_loading():
        during = trained()
    np.testing.assert_array_equal(during, alone)


def test_masking_drawn_while_another_model_loads_is_the_one_drawn_alone():
    # the Masking lab's statistics and simulation: the same seed, the same masks (a float16
    # default dtype made the rates 0.1499 / 0.7998, so some draws came out otherwise)
    from models import masking_statistics, simulate_masking

    sentences = ["The cat sat on the mat by the old wooden door.",
                 "She opened the window and looked at the rain outside."] * 4

    def drawn():
        stats = masking_statistics("mini-bert", sentences, draws=300, seed=0)
        simulation = simulate_masking("mini-bert", " ".join(sentences[:2]), epochs=10, seed=0)
        return stats.mean, [(e.shown_ids, e.fates) for e in simulation.epochs]

    alone = drawn()
    with another_visitor_loading(seconds=3):
        during = drawn()
    assert during == alone
