"""The oneDNN path for the body's linear layers (models/runtime/onednn.py).

References: ``nn.Linear`` itself (the same model run outside the block, on MKL) and
torch.autograd (gradients taken inside the block). Parity of whole results with
transformers' pipeline and sentence-transformers, which run the plain path on their own
model copies, is in test_fill_mask.py, test_batching.py and test_embeddings.py: on x86-64
those tests go through this path (checked here).
"""

from __future__ import annotations

import platform
import threading

import pytest
import torch

import models.runtime.onednn as onednn
from models import load_model, onednn_enabled, use_onednn
from models.runtime.onednn import onednn_linears


@pytest.fixture
def calls(monkeypatch):
    """The threads that ran oneDNN's op, one entry per call."""
    seen: list[int] = []
    real = onednn._linear_op

    def spy(x, weight, bias):
        seen.append(threading.get_ident())
        return real(x, weight, bias)

    monkeypatch.setattr(onednn, "_linear_op", spy)
    return seen


@pytest.fixture(scope="module")
def encoder(mlm_key):
    return load_model(mlm_key, head="mlm")


def _inputs(loaded, text="The capital of France is a city on the river Seine."):
    return dict(loaded.tokenizer(text, return_tensors="pt"))


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="on by default on x86-64 only")
def test_on_by_default_on_x86_64_so_the_parity_tests_cover_it():
    assert onednn_enabled()


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_inside_the_block_the_body_runs_on_onednn_with_nn_linear_results(encoder, calls):
    model = encoder.model
    inputs = _inputs(encoder)
    with torch.inference_mode():
        plain = model(**inputs).logits
        assert calls == []  # outside the block: nn.Linear
        with onednn_linears(model):
            fast = model(**inputs).logits
    n_linear = sum(type(m) is torch.nn.Linear for m in model.base_model.modules())
    assert len(calls) == n_linear  # every linear layer of the body, once; the head's are not patched
    assert torch.allclose(fast, plain, rtol=1e-5, atol=1e-4)
    assert torch.equal(fast.argmax(-1), plain.argmax(-1))


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_gradients_take_the_plain_path(encoder, calls):
    model = encoder.model
    inputs = _inputs(encoder)
    embeddings = model.get_input_embeddings()(inputs["input_ids"]).detach().requires_grad_(True)
    with onednn_linears(model):
        out = model(inputs_embeds=embeddings, attention_mask=inputs["attention_mask"]).logits[0, 3].sum()
        (grad,) = torch.autograd.grad(out, embeddings)
    assert calls == []
    embeddings_ref = embeddings.detach().clone().requires_grad_(True)
    out_ref = model(inputs_embeds=embeddings_ref, attention_mask=inputs["attention_mask"]).logits[0, 3].sum()
    (grad_ref,) = torch.autograd.grad(out_ref, embeddings_ref)
    assert torch.equal(grad, grad_ref)
    model.zero_grad(set_to_none=True)


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_another_thread_is_not_switched(encoder, calls):
    """The block is one thread's: a request served beside it keeps nn.Linear."""
    model = encoder.model
    inputs = _inputs(encoder)
    opened, done = threading.Event(), threading.Event()

    def hold_block_open():
        with onednn_linears(model):
            opened.set()
            done.wait(timeout=60)

    holder = threading.Thread(target=hold_block_open)
    holder.start()
    try:
        assert opened.wait(timeout=60)
        with torch.inference_mode():
            model(**inputs)
    finally:
        done.set()
        holder.join()
    assert calls == []


def test_switched_off_everywhere(encoder, calls):
    model = encoder.model
    inputs = _inputs(encoder)
    previous = use_onednn(False)
    try:
        assert not onednn_enabled()
        with torch.inference_mode(), onednn_linears(model):
            model(**inputs)
    finally:
        use_onednn(previous)
    assert calls == []


def test_a_missing_or_disagreeing_op_keeps_the_path_off(monkeypatch):
    def missing(x, weight, bias):
        raise RuntimeError("no such op in this build")

    monkeypatch.setattr(onednn, "_linear_op", missing)
    assert onednn._check_op() is False
    monkeypatch.setattr(onednn, "_linear_op", lambda x, weight, bias: torch.nn.functional.linear(x, weight) + 1)
    assert onednn._check_op() is False
