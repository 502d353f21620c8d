"""The oneDNN path for the body's linear layers (models/runtime/onednn.py).

References: ``nn.Linear`` itself (the same model run outside the block, on MKL), with
``F.gelu`` and the residual add for the fused paths, and torch.autograd (gradients taken
inside the block). Parity of whole results with
transformers' pipeline and sentence-transformers, which run the plain path on their own
model copies, is in test_fill_mask.py, test_batching.py and test_embeddings.py: on x86-64
those tests go through this path (checked here).

The path is the CPU's: on a GPU machine the shared model runs on the GPU, where the path
stays off (checked here, on the device's model and inputs), and the CPU path is checked on a
float32 CPU copy of the same model.
"""

from __future__ import annotations

import copy
import platform
import threading

import pytest
import torch

import models.runtime.onednn as onednn
from helpers import spy_onednn
from models import get_spec, load_model
from models.runtime import onednn_enabled, use_onednn
from models.runtime.onednn import onednn_linears


@pytest.fixture
def calls(monkeypatch):
    """(op, thread, input shape) for each call of oneDNN's ops: plain, + GELU, + add."""
    return spy_onednn(monkeypatch)


@pytest.fixture(scope="module")
def encoder(mlm_key):
    return load_model(get_spec(mlm_key), head="mlm")


@pytest.fixture(scope="module")
def cpu_model(encoder):
    """The model where the oneDNN path applies: float32 on the CPU. On a CPU machine, the
    shared model itself; on a GPU machine, a float32 CPU copy of it (its weights read back
    from float16: the same for nn.Linear and oneDNN, so parity is unaffected)."""
    if encoder.device.type == "cpu" and encoder.dtype == torch.float32:
        return encoder.model
    return copy.deepcopy(encoder.model).to(device="cpu", dtype=torch.float32)


def _inputs(loaded, text="The capital of France is a city on the river Seine.", device="cpu"):
    return {k: v.to(device) for k, v in loaded.tokenizer(text, return_tensors="pt").items()}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="on by default on x86-64 only")
def test_on_by_default_on_x86_64_so_the_parity_tests_cover_it():
    assert onednn_enabled()


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_inside_the_block_the_body_runs_on_onednn_with_nn_linear_results(encoder, cpu_model, calls):
    model = cpu_model
    inputs = _inputs(encoder)
    with torch.inference_mode():
        plain = model(**inputs).logits
        assert calls == []  # outside the block: nn.Linear
        with onednn_linears(model):
            fast = model(**inputs).logits
    n_linear = sum(type(m) is torch.nn.Linear for m in model.base_model.modules())
    n_layers = model.config.num_hidden_layers
    ops = [op for op, _, _ in calls]
    assert len(ops) == n_linear  # every linear layer of the body, once; the head's are not patched
    # each block's intermediate GELU and both residual adds ride on their products
    assert ops.count("linear+gelu") == n_layers and ops.count("linear+add") == 2 * n_layers
    assert torch.allclose(fast, plain, rtol=1e-5, atol=1e-4)
    assert torch.equal(fast.argmax(-1), plain.argmax(-1))


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_gradients_take_the_plain_path(encoder, cpu_model, calls):
    model = cpu_model
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
def test_another_thread_is_not_switched(encoder, cpu_model, calls):
    """The block is one thread's: a request served beside it keeps nn.Linear."""
    model = cpu_model
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


def test_switched_off_everywhere(encoder, cpu_model, calls):
    model = cpu_model
    inputs = _inputs(encoder)
    previous = use_onednn(False)
    try:
        assert not onednn_enabled()
        with torch.inference_mode(), onednn_linears(model):
            model(**inputs)
    finally:
        use_onednn(previous)
    assert calls == []


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_a_model_on_a_gpu_keeps_its_own_kernels(encoder, calls):
    """On a GPU (or in float16) the block changes nothing: the body's linear layers stay
    nn.Linear, on the model's device. Where the shared model is float32 on the CPU, a
    float16 CPU copy stands in for it (the path takes float32 only)."""
    if encoder.device.type == "cpu" and encoder.dtype == torch.float32:
        model, device = copy.deepcopy(encoder.model).to(dtype=torch.float16), "cpu"
    else:
        model, device = encoder.model, encoder.device
    inputs = _inputs(encoder, device=device)
    with torch.inference_mode():
        plain = model(**inputs).logits
        with onednn_linears(model):
            inside = model(**inputs).logits
    assert calls == []
    assert inside.device == plain.device and inside.dtype == plain.dtype
    assert torch.allclose(inside.float(), plain.float(), rtol=1e-3, atol=1e-3)


def test_a_missing_or_disagreeing_op_keeps_the_path_off(monkeypatch):
    def missing(x, weight, bias):
        raise RuntimeError("no such op in this build")

    monkeypatch.setattr(onednn, "_linear_op", missing)
    assert onednn._check_op() is False
    monkeypatch.setattr(onednn, "_linear_op", lambda x, weight, bias: torch.nn.functional.linear(x, weight) + 1)
    assert onednn._check_op() is False


def test_a_tanh_gelu_in_place_of_erf_keeps_the_fusion_off(monkeypatch):
    """The fused GELU must be the exact (erf) one that BERT's ``gelu`` is, not the tanh one;
    without it the plain products stay on oneDNN."""
    tanh = lambda x, weight, bias: torch.nn.functional.gelu(torch.nn.functional.linear(x, weight, bias),
                                                            approximate="tanh")
    monkeypatch.setattr(onednn, "_linear_gelu_op", tanh)
    assert onednn._check_fused() is False and onednn._check_packed() is False
    assert onednn._check_op() is onednn.torch.backends.mkldnn.is_available()


# --- the fused post-ops and the packed weights ------------------------------------------------


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
@pytest.mark.parametrize("rows", [1, 7, 64, 300])
@pytest.mark.parametrize("packed", [False, True])
def test_fused_ops_equal_linear_then_gelu_and_linear_then_add(rows, packed):
    generator = torch.Generator().manual_seed(rows)
    x = torch.randn(2, rows, 96, generator=generator)  # (B, T, in)
    weight = torch.randn(160, 96, generator=generator) / 96 ** 0.5  # (out, in)
    bias = torch.randn(160, generator=generator)
    other = torch.randn(2, rows, 160, generator=generator)  # the residual, shaped as the output
    w = onednn._pack(weight) if packed else weight
    with torch.inference_mode():
        linear = torch.nn.functional.linear(x, weight, bias)
        erf, tanh = torch.nn.functional.gelu(linear), torch.nn.functional.gelu(linear, approximate="tanh")
        fused_gelu = onednn._linear_gelu_op(x, w, bias)
        fused_add = onednn._linear_add_op(x, other, w, bias)
        plain = onednn._linear_op(x, w, bias)
    assert (fused_gelu - erf).abs().max() <= 1e-5
    assert (fused_gelu - tanh).abs().max() > 1e-4  # the erf GELU, told apart from the tanh one
    assert (fused_add - (linear + other)).abs().max() <= 1e-5
    assert (plain - linear).abs().max() <= 1e-5


def _padded_batch(loaded, texts=("A [MASK] day.", "The cat sat on the [MASK] and looked out of the window.")):
    batch = loaded.tokenizer(list(texts), return_tensors="pt", padding=True)
    assert (batch["attention_mask"] == 0).any()  # really padded
    return dict(batch)


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_a_padded_batch_inside_the_block_equals_nn_linear_gelu_and_add(encoder, cpu_model, calls):
    """The body on a padded batch: fused GELU and adds against nn.Linear + F.gelu + add."""
    batch = _padded_batch(encoder)
    keep = batch["attention_mask"].bool()  # (B, T)
    with torch.inference_mode():
        plain = cpu_model.base_model(**batch).last_hidden_state  # (B, T, H)
        assert calls == []
        with onednn_linears(cpu_model):
            fast = cpu_model.base_model(**batch).last_hidden_state
    shapes = {op: {shape for name, _, shape in calls if name == op} for op in ("linear+gelu", "linear+add")}
    assert all(shape[:2] == tuple(keep.shape) for found in shapes.values() for shape in found) and all(shapes.values())
    assert (fast[keep] - plain[keep]).abs().max() <= 1e-5


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_packed_weights_follow_a_training_step(encoder, cpu_model):
    """The packed copy of each weight is re-made after an optimiser step changes it in place."""
    model = copy.deepcopy(cpu_model)
    batch = _padded_batch(encoder)
    with torch.inference_mode(), onednn_linears(model):
        model(**batch)  # packs the weights as they are now
    linears = [m for m in model.base_model.modules() if type(m) is torch.nn.Linear]
    assert all(m._encoder_lab_pack for m in linears) and all(m in onednn._packed for m in linears)
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model(**batch).logits.sum().backward()
    optimiser.step()
    model.eval()
    with torch.inference_mode():
        plain = model(**batch).logits
        with onednn_linears(model):
            fast = model(**batch).logits
    assert torch.allclose(fast, plain, rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_a_body_over_the_packing_budget_reads_its_weights_in_place(encoder, cpu_model, monkeypatch):
    model = copy.deepcopy(cpu_model)
    model.__dict__.pop("_encoder_lab_onednn", None)  # patched afresh under the budget below
    monkeypatch.setattr(onednn, "PACK_MAX_BYTES", 0)
    batch = _padded_batch(encoder)
    with torch.inference_mode():
        plain = model(**batch).logits
        with onednn_linears(model):
            fast = model(**batch).logits
    linears = [m for m in model.base_model.modules() if type(m) is torch.nn.Linear]
    assert not any(m._encoder_lab_pack for m in linears) and not any(m in onednn._packed for m in linears)
    assert torch.allclose(fast, plain, rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
def test_training_mode_keeps_its_dropout_before_the_add(encoder, cpu_model, calls):
    """In train mode (dropout live) the add-and-norm modules keep their own forward, even
    without gradients; the linear layers and the GELU (no dropout there) still take oneDNN."""
    model = copy.deepcopy(cpu_model).train()
    with torch.no_grad(), onednn_linears(model):
        model(**_padded_batch(encoder))
    ops = [op for op, _, _ in calls]
    assert "linear+add" not in ops and "linear" in ops


@pytest.mark.skipif(not onednn_enabled(), reason="oneDNN's linear op is not available here")
@pytest.mark.parametrize("act", ["gelu_new", "relu"])
def test_other_activations_are_not_fused(act, calls):
    """A tanh GELU (``gelu_new``) or a ReLU keeps its own activation after a plain oneDNN product."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, hidden_act=act)
    model = BertModel(config).eval()
    ids = torch.tensor([[1, 5, 7, 9, 2]])
    with torch.inference_mode():
        plain = model(input_ids=ids).last_hidden_state
        with onednn_linears(model):
            fast = model(input_ids=ids).last_hidden_state
    ops = [op for op, _, _ in calls]
    assert "linear+gelu" not in ops and ops.count("linear+add") == 2
    assert (fast - plain).abs().max() <= 1e-5
