"""The padding-free BERT forward (models/runtime/packed.py) against transformers' own padded
forward: every layer's states at the real tokens, with oneDNN's path on and off."""

from __future__ import annotations

import pytest
import torch

from torch.utils._python_dispatch import TorchDispatchMode

from helpers import parity_atol
from models import embed, get_spec, load_model
from models.runtime import onednn_enabled, use_onednn
from models.runtime import packed
from models.runtime.onednn import onednn_linears

ATOL = parity_atol()
SENTENCES = [
    "Ok",
    "The quick brown fox jumps over the lazy dog.",
    "It rained all day, so we stayed inside and read books by the fire, as we always do.",
    "Dogs bark.",
]


@pytest.fixture(scope="module")
def minilm():
    return load_model(get_spec("minilm-l6"), head="base")


def _padded(loaded, sentences):
    enc = loaded.tokenizer(sentences, padding=True, return_tensors="pt", return_token_type_ids=False)
    return enc["input_ids"].to(loaded.device), enc["attention_mask"].to(loaded.device)


LONG = " ".join(["The committee met for several hours on Tuesday to discuss the budget for the coming year."] * 9)


NARROW = ["Ok", "Dogs bark."]  # 3 and 5 tokens: attention rows narrower than NARROW_SOFTMAX


@pytest.mark.parametrize("onednn, sentences", [(True, SENTENCES), (False, SENTENCES), (True, SENTENCES + [LONG]),
                                               (True, NARROW)])
def test_every_layer_matches_transformers_padded_forward(minilm, onednn, sentences):
    """Short batches take the three-product attention (the narrowest with the written-out
    softmax), one past MATH_ATTENTION_MAX_WIDTH tokens torch's SDPA: all against
    transformers' own forward."""
    model = minilm.model
    ids, mask = _padded(minilm, sentences)
    assert (ids.shape[1] > packed.MATH_ATTENTION_MAX_WIDTH) == (LONG in sentences)
    assert (ids.shape[1] < packed.NARROW_SOFTMAX) == (sentences == NARROW)
    assert (mask == 0).any()  # a real mix: some rows padded
    layers = list(range(model.config.num_hidden_layers + 1))
    previous = use_onednn(onednn)
    try:
        with torch.inference_mode():
            theirs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
            assert any(m._forward_hooks for m in model.modules())  # transformers' own output capture
            assert packed.can_pack(model)  # ... which the packed path passes through
            with onednn_linears(model):
                ours = packed.packed_hidden_states(model, ids, mask, layers)
    finally:
        use_onednn(previous)
    keep = mask.bool()
    for layer in layers:
        assert ours[layer].shape == theirs[layer].shape
        torch.testing.assert_close(ours[layer][keep].float(), theirs[layer][keep].float(), atol=ATOL, rtol=0)
        assert not ours[layer][~keep].any()  # padding stays zero: nothing computed there


def test_only_the_asked_layers_come_back(minilm):
    ids, mask = _padded(minilm, SENTENCES[:2])
    with torch.inference_mode():
        states = packed.packed_hidden_states(minilm.model, ids, mask, [0, 6])
        full = minilm.model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert len(states) == 2
    keep = mask.bool()
    torch.testing.assert_close(states[1][keep], full[keep], atol=ATOL, rtol=0)


def test_embed_from_plain_text_takes_the_packed_path(minilm, monkeypatch):
    """What a user's embed call runs on the CPU: the packed forward, one call per batch."""
    seen = []
    real = packed.packed_hidden_states

    def spy(model, ids, mask, layers):
        seen.append(int(mask.sum()))
        return real(model, ids, mask, layers)

    import models.embeddings.pooling as pooling

    monkeypatch.setattr(pooling, "packed_hidden_states", spy)
    vectors = embed("minilm-l6", SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384)
    if minilm.device.type == "cpu":
        assert sum(seen) == sum(len(minilm.tokenizer(s)["input_ids"]) for s in SENTENCES)
    else:
        assert not seen  # an accelerator pads as transformers does


def test_models_it_does_not_know_keep_transformers_path(minilm):
    model = minilm.model
    handle = model.encoder.layer[0].attention.register_forward_hook(lambda *a: None)
    try:
        assert not packed.can_pack(model)  # hooked (the attribution and inside views)
    finally:
        handle.remove()
    assert packed.can_pack(model)
    model.train()
    try:
        assert not packed.can_pack(model)  # dropout would run
    finally:
        model.eval()
    roberta = load_model(get_spec("mini-roberta"), head="base").model  # other embeddings (padding-offset positions)
    assert type(roberta).__name__ != "BertModel" and not packed.can_pack(roberta)


class _Ops(TorchDispatchMode):
    """The ops torch dispatches on this thread."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("onednn", [True, False])
def test_batches_without_padding_match_transformers(minilm, onednn):
    """One text, or different texts of one length (fill-mask's usual call): no row is packed
    or unpacked (no index copy), and every layer is transformers'."""
    model = minilm.model
    ops = _Ops()
    previous = use_onednn(onednn)
    try:
        same_length = ["A slow red cat walks under the busy old bridge.",
                       "Every child reads a short story before going to bed."]  # 13 tokens each
        for sentences in (SENTENCES[1:2], same_length):
            ids, mask = _padded(minilm, sentences)
            assert bool(mask.all())
            layers = list(range(model.config.num_hidden_layers + 1))
            with torch.inference_mode():
                theirs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
                with onednn_linears(model), ops:
                    ours = packed.packed_hidden_states(model, ids, mask, layers)
            for layer in layers:
                torch.testing.assert_close(ours[layer].float(), theirs[layer].float(), atol=ATOL, rtol=0)
    finally:
        use_onednn(previous)
    assert ops.seen and not any(op.startswith("aten.index_copy") for op in ops.seen)
    products = [op for op in ops.seen if op.startswith("mkldnn._linear_pointwise")]
    assert bool(products) == (onednn and onednn_enabled())


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu"])
def test_blocks_of_another_activation_match_transformers(act):
    """A BertModel whose feed-forward is not BERT's exact GELU (oneDNN fuses only that one):
    every layer matches transformers' own forward, block by block."""
    model = _small_bert(act)
    ids = torch.randint(5, 60, (3, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 3:] = 0
    ran = []
    real_block = packed._block

    def counted(*args):
        ran.append(1)
        return real_block(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(packed, "_block", counted)
        with torch.inference_mode():
            theirs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
            with onednn_linears(model):
                ours = packed.packed_hidden_states(model, ids, mask, [0, 1, 2])
    assert packed.can_pack(model)
    assert len(ran) == 2  # both blocks
    keep = mask.bool()
    for layer in (0, 1, 2):
        torch.testing.assert_close(ours[layer][keep], theirs[layer][keep], atol=1e-5, rtol=0)


@pytest.mark.parametrize("onednn, sentences", [(True, SENTENCES), (False, SENTENCES), (True, SENTENCES + [LONG]),
                                               (True, NARROW), (True, SENTENCES[1:2])])
def test_last_states_at_some_positions_match_transformers(minilm, onednn, sentences):
    """Fill-mask's forward: the last layer at a few (row, column) positions only, against
    transformers' last hidden state there: the first text's first and last real tokens, the
    middle of every other text, the last text's last real token (with one text: the same
    position asked twice); padded, narrow, long (SDPA below the last layer) and unpadded
    batches."""
    model = minilm.model
    ids, mask = _padded(minilm, sentences)
    lengths = mask.sum(1).tolist()
    pairs = [(0, 0), (0, lengths[0] - 1)] + [(b, lengths[b] // 2) for b in range(1, len(lengths))]
    pairs.append((len(lengths) - 1, lengths[-1] - 1))
    rows = torch.tensor([b for b, _ in pairs], device=ids.device)
    cols = torch.tensor([t for _, t in pairs], device=ids.device)
    previous = use_onednn(onednn)
    try:
        with torch.inference_mode():
            theirs = model(input_ids=ids, attention_mask=mask).last_hidden_state[rows, cols]  # (P, d)
            with onednn_linears(model):
                ours = packed.packed_last_states_at(model, ids, mask, rows, cols)
    finally:
        use_onednn(previous)
    assert ours.shape == theirs.shape == (len(pairs), model.config.hidden_size)
    torch.testing.assert_close(ours.float(), theirs.float(), atol=ATOL, rtol=0)


@pytest.mark.parametrize("width", [1, 2, 7, 15, 16, 17, 40])
def test_softmax_last_is_torchs_softmax(width):
    """The written-out softmax below NARROW_SOFTMAX (and torch's at or above it) against
    torch.softmax in float64, with masked (-inf) keys as the attention bias leaves them, on
    scores large enough that exp() overflows float32 unless the row's maximum comes off first."""
    generator = torch.Generator().manual_seed(width)
    scores = torch.randn(3, 4, 5, width, generator=generator) * 4
    scores[0] += 120.0  # exp(120) is inf in float32
    if width > 1:
        scores[..., -(width // 2):] = float("-inf")  # padding keys; every row keeps a real one
    want = torch.softmax(scores.double(), -1)
    got = packed.softmax_last(scores.clone())
    torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=0)
    if width > 1:
        assert not got[..., -(width // 2):].any()  # the masked keys take no weight


def test_the_embeddings_bench_says_which_forward_its_batches_take(minilm):
    """bench.embeddings prints the path its batches took: the packed forward on the CPU."""
    from bench.embeddings import _blocks_path

    said = _blocks_path(minilm, minilm.device)
    assert ("packed BERT forward" in said) == (minilm.device.type == "cpu")


def _small_bert(act="gelu"):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, hidden_act=act, max_position_embeddings=40)
    return BertModel(config, add_pooling_layer=False).eval()
