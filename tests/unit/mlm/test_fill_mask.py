"""fill_mask on the embedded MLM: shapes, order, spellings, parity with the pipeline, errors."""

from __future__ import annotations

import math

import pytest
import torch

from models import (
    CapabilityError,
    EncoderLabError,
    InputError,
    ModelUnavailableError,
    UnknownModelError,
    fill_mask,
    mask_word,
    text_segments,
)
from models.mlm.fill_mask import MAX_MASKS


def test_one_mask_top_k_sorted_probabilities(mlm_key):
    result = fill_mask(mlm_key, "The capital of France is [MASK].", top_k=7)
    assert len(result.masks) == 1
    preds = result.masks[0].predictions
    assert len(preds) == 7
    scores = [p.score for p in preds]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < s <= 1.0 for s in scores)
    assert sum(scores) <= 1.0 + 1e-6
    assert len({p.token_id for p in preds}) == 7
    assert result.tokens[result.masks[0].position] == "[MASK]"


def test_several_masks_in_text_order(mlm_key):
    result = fill_mask(mlm_key, "The [MASK] sat on the [MASK] near the [MASK].", top_k=3)
    positions = [m.position for m in result.masks]
    assert [m.index for m in result.masks] == [0, 1, 2]
    assert positions == sorted(positions)
    assert all(result.tokens[p] == "[MASK]" for p in positions)
    assert "[MASK]" not in result.filled_text
    # the filled sentence keeps the user's words and puts each top-1 token in place
    tops = [m.predictions[0].token.strip() for m in result.masks]
    assert result.filled_text == "The {} sat on the {} near the {}.".format(*tops)


def test_mask_spellings_are_equivalent(mlm_key):
    a = fill_mask(mlm_key, "The cat sat on the [MASK].")
    b = fill_mask(mlm_key, "The cat sat on the <mask>.")
    c = fill_mask(mlm_key, "The cat sat on the [mask].")
    assert a.masks == b.masks == c.masks


def test_scores_are_softmax_over_whole_vocabulary(mlm_key, mlm_loaded):
    text = "She opened the [MASK] and walked in."
    result = fill_mask(mlm_key, text, top_k=1)
    enc = mlm_loaded.tokenizer(text, return_tensors="pt").to(mlm_loaded.device)
    with torch.no_grad():
        logits = mlm_loaded.model(**enc).logits[0].cpu()
    pos = result.masks[0].position
    full = torch.softmax(logits[pos].double(), dim=-1)
    assert logits.shape[-1] == mlm_loaded.model.config.vocab_size
    assert result.masks[0].predictions[0].token_id == int(full.argmax())
    assert math.isclose(result.masks[0].predictions[0].score, float(full.max()), abs_tol=1e-6)


@pytest.fixture(scope="module")
def reference_pipe(mlm_key, mlm_loaded):
    """transformers' fill-mask pipeline on its own copy of the model, on the same device and dtype.

    The pipeline moves the model it is given to its device; handing it the session's
    cached model would move that model for every later test.
    """
    import copy

    from transformers import pipeline

    model = copy.deepcopy(mlm_loaded.model)
    return pipeline("fill-mask", model=model, tokenizer=mlm_loaded.tokenizer, device=mlm_loaded.device,
                    dtype=mlm_loaded.dtype)


def test_the_reference_pipeline_leaves_the_shared_model_alone(mlm_loaded, reference_pipe):
    assert reference_pipe.model is not mlm_loaded.model
    assert next(mlm_loaded.model.parameters()).device.type == mlm_loaded.device.type


@pytest.mark.parametrize(
    "text",
    [
        "The capital of France is [MASK].",
        "The [MASK] sat on the mat.",
        "The patient [MASK] Warfarin 5mg.",
        "Paris is the [MASK] of [MASK] and the [MASK] of fashion.",
    ],
)
def test_parity_with_transformers_pipeline(mlm_key, mlm_loaded, reference_pipe, text):
    expected = reference_pipe(text, top_k=10)
    if isinstance(expected[0], dict):  # the pipeline un-nests a single mask
        expected = [expected]
    ours = fill_mask(mlm_key, text, top_k=10)
    assert len(ours.masks) == len(expected)
    # same device and dtype on both sides; half precision on a GPU rounds to ~1e-3
    tolerance = 1e-5 if mlm_loaded.dtype == torch.float32 else 2e-3
    for mask, ref in zip(ours.masks, expected):
        if mlm_loaded.dtype == torch.float32:  # in half precision near-ties may swap
            assert [p.token_id for p in mask.predictions] == [r["token"] for r in ref]
            assert [p.token for p in mask.predictions] == [r["token_str"] for r in ref]
        else:
            assert mask.predictions[0].token_id == ref[0]["token"]
        ref_scores = {r["token"]: r["score"] for r in ref}
        for p in mask.predictions:
            if p.token_id in ref_scores:
                assert abs(p.score - ref_scores[p.token_id]) <= tolerance


def test_fused_onednn_path_on_a_padded_batch_matches_the_pipeline(mlm_loaded, reference_pipe, monkeypatch):
    """Two texts of different lengths in one forward (as concurrent requests share one): on
    the CPU in float32 the blocks run oneDNN's fused GELU and residual adds
    (models/runtime/onednn.py), a BERT body packed (the two texts' real tokens as the rows of
    one matrix, no padding computed); scores and top-k ids held to the pipeline on its own copy."""
    from helpers import spy_onednn
    from models.runtime import onednn_enabled
    from models.mlm.fill_mask import _forward_batch, encode_masks, mask_spans, packs

    calls = spy_onednn(monkeypatch)
    texts = ["A [MASK] day.", "Paris is the [MASK] of [MASK] and the home of many museums."]
    encoded = [encode_masks(mlm_loaded, t, mask_spans(t)) for t in texts]
    batched = _forward_batch([(mlm_loaded, e) for e in encoded])
    exact = mlm_loaded.dtype == torch.float32
    if onednn_enabled() and mlm_loaded.device.type == "cpu" and exact:
        real = sum(int(e.inputs["input_ids"].shape[1]) for e in encoded)
        rows = real if packs(mlm_loaded) else len(texts)  # packed (N, H), else padded (2, T, H)
        for op in ("linear+gelu", "linear+add"):
            assert any(name == op and shape[0] == rows for name, _, shape in calls), op
    for text, logits in zip(texts, batched):
        expected = reference_pipe(text, top_k=10)
        expected = [expected] if isinstance(expected[0], dict) else expected
        probs = logits.softmax(-1)
        for row, ref in zip(probs, expected):
            scores, ids = row.topk(10)
            if exact:
                assert ids.tolist() == [r["token"] for r in ref]
            else:
                assert int(ids[0]) == ref[0]["token"]
            for score, token in zip(scores.tolist(), ids.tolist()):
                ref_scores = {r["token"]: r["score"] for r in ref}
                if token in ref_scores:
                    assert abs(score - ref_scores[token]) <= (1e-5 if exact else 2e-3)


def test_deterministic(mlm_key):
    assert fill_mask(mlm_key, "A [MASK] day.") == fill_mask(mlm_key, "A [MASK] day.")


def test_records_are_flat_json(mlm_key):
    import json

    result = fill_mask(mlm_key, "The [MASK] sat on the [MASK].", top_k=2)
    records = result.to_records()
    assert len(records) == 4
    assert [(r["mask"], r["rank"]) for r in records] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    json.dumps(records)
    json.dumps(result.to_dict())


@pytest.mark.parametrize(
    ("model", "text", "top_k", "error", "words"),
    [
        ("no-such-model", "A [MASK].", 5, UnknownModelError, "Unknown model"),
        ("minilm-l6", "A [MASK].", 5, CapabilityError, "no trained masked-LM head"),
        ("splade-tiny", "", 5, InputError, "empty"),
        ("splade-tiny", "   \n\t ", 5, InputError, "empty"),
        ("splade-tiny", "No mask here.", 5, InputError, "no mask"),
        ("splade-tiny", "[MASK] " * (MAX_MASKS + 1), 5, InputError, "the limit is"),
        ("splade-tiny", "word " * 600 + "[MASK]", 5, InputError, "reads at most 512 tokens"),
        ("splade-tiny", "x" * 20_001 + "[MASK]", 5, InputError, "characters long"),
        ("splade-tiny", "A [MASK].", 0, InputError, "top_k"),
        ("splade-tiny", "A [MASK].", 51, InputError, "top_k"),
        ("splade-tiny", "A [MASK].", 2.5, InputError, "top_k"),
        ("splade-tiny", "A [MASK].", True, InputError, "top_k"),
        ("splade-tiny", "A [MASK].", "5", InputError, "top_k"),
        ("splade-tiny", None, 5, InputError, "string"),
    ],
)
def test_bad_input_gets_a_specific_message(model, text, top_k, error, words):
    with pytest.raises(error) as info:
        fill_mask(model, text, top_k)
    assert isinstance(info.value, EncoderLabError) and isinstance(info.value, ValueError)
    assert words.lower() in str(info.value).lower()


def test_max_masks_accepted(mlm_key):
    result = fill_mask(mlm_key, " ".join(["[MASK]"] * MAX_MASKS), top_k=1)
    assert len(result.masks) == MAX_MASKS


def test_offline_hub_model_is_refused_at_once(monkeypatch):
    import socket

    from models.registry import catalogue as registry

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(registry, "hub_cached", lambda repo_id: False)  # whatever this machine holds

    def no_network(*args, **kwargs):
        raise AssertionError("an offline refusal must not touch the network")

    # "at once": no connection is tried (no probe, no download, no retries)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(ModelUnavailableError) as info:
        fill_mask("roberta-base", "The <mask> sat.")
    message = str(info.value)
    assert "roberta-base" in message and "python -m scripts.prefetch roberta-base" in message


def test_text_segments_rebuild_text_and_mark_masks():
    text = "The cat's [MASK] sat, on <mask>!"
    segments = text_segments(text)
    assert "".join(s for s, _ in segments) == text
    kinds = {s: k for s, k in segments}
    assert kinds["cat's"] == "word" and kinds["[MASK]"] == "mask" and kinds["<mask>"] == "mask"
    assert kinds[","] == "word" and kinds[" "] is None
    assert text_segments("") == []  # an empty box: nothing to click
    with pytest.raises(InputError, match="must be a string, not int"):  # what an API caller may send
        text_segments(12345)


def test_mask_word_replaces_only_that_word():
    text = "The cat sat."
    segments = text_segments(text)
    cat = [s for s, _ in segments].index("cat")
    assert mask_word(text, cat) == "The [MASK] sat."
    assert mask_word(text, cat + 1) == text  # a space: unchanged
    assert mask_word(text, 99) == text
    assert mask_word("A [MASK] b", 2) == "A [MASK] b"  # already a mask


# --- the sentence rebuilt with the top guesses (hand-written expectations) ----------------


def _guess(token: str, raw: str) -> "Prediction":
    from models.mlm.results import Prediction

    return Prediction(token=token, token_id=0, score=0.5, raw_token=raw)


@pytest.mark.parametrize(
    ("text", "guesses", "expected"),
    [
        # a WordPiece continuation joins the word before it, "##" dropped
        ("The play [MASK] fun.", [("##ing", "##ing")], "The playing fun."),
        ("Un [MASK] results.", [("##believable", "##believable")], "Unbelievable results."),
        # a whole word keeps its space; BPE / SentencePiece markers are already decoded away
        ("The [MASK] sat.", [("cat", "cat")], "The cat sat."),
        ("The [MASK] sat.", [(" cat", "Ġcat")], "The cat sat."),
        ("The [MASK] sat.", [("cat", "▁cat")], "The cat sat."),
        # several masks, each with its own rule; the text between them is the user's
        ("A <mask> [MASK] day, [mask]!", [("sun", "sun"), ("##ny", "##ny"), ("yes", "yes")],
         "A sunny day, yes!"),
    ],
)
def test_filled_text_by_hand(text, guesses, expected):
    from models.mlm.fill_mask import MASK_PATTERN, _fill_in

    spans = [m.span() for m in MASK_PATTERN.finditer(text)]
    assert _fill_in(text, spans, [_guess(t, r) for t, r in guesses]) == expected


@pytest.mark.parametrize(
    ("text", "guess", "starts_word", "expected"),
    [
        # a mask glued to a word is a token of its own: a word the tokenizer starts gets a space
        ("It is[MASK].", ("paris", "paris"), True, "It is paris."),
        ("It is<mask>.", (" spoken", "Ġspoken"), True, "It is spoken."),
        ("[MASK][MASK] go.", ("we", "we"), True, "we we go."),
        # a piece the tokenizer glues, or punctuation, stays glued
        ("It is[MASK].", ("s", "s"), False, "It iss."),
        ("It is[MASK]", (".", "."), False, "It is."),
    ],
)
def test_filled_text_of_a_glued_mask_by_hand(text, guess, starts_word, expected):
    from models.mlm.fill_mask import MASK_PATTERN, _fill_in

    spans = [m.span() for m in MASK_PATTERN.finditer(text)]
    assert _fill_in(text, spans, [_guess(*guess)] * len(spans), [starts_word] * len(spans)) == expected


@pytest.mark.parametrize("key", ["minilm-mlm", "mini-roberta", "mini-deberta"])
def test_a_mask_glued_to_the_word_before_reads_and_fills_as_a_word_of_its_own(key):
    """"is[MASK]" is tokenised as "is [MASK]" (the mask a token of its own): the sentence put
    back together says what the model read, a separate word, not "isparis"."""
    glued = fill_mask(key, "The capital of France is[MASK].", top_k=1)
    spaced = fill_mask(key, "The capital of France is [MASK].", top_k=1)
    assert glued.tokens == spaced.tokens
    top = glued.masks[0].predictions[0]
    assert top.raw_token[:1] in ("Ġ", "▁") or not top.raw_token.startswith("##")  # a word, not a piece
    assert glued.filled_text == spaced.filled_text == f"The capital of France is {top.token.strip()}."


# --- a byte-level BPE model: token strings as the pipeline shows them ----------------------


@pytest.fixture(scope="module")
def tiny_roberta(tmp_path_factory):
    """A byte-level BPE tokenizer trained on a few lines and a 2-layer random-init
    RobertaForMaskedLM (seeded): plumbing only, its guesses mean nothing."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizer

    folder = tmp_path_factory.mktemp("tiny-roberta")
    bpe = ByteLevelBPETokenizer()
    lines = ["The river bank was calm.", "Cash at the bank.", "I sat by the river and watched it."] * 20
    bpe.train_from_iterator(lines, vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    tokenizer = RobertaTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=130)
    return RobertaForMaskedLM(config).eval(), tokenizer


def test_byte_level_bpe_predictions_match_the_pipeline(monkeypatch, tiny_roberta):
    """Ġ-marked vocabulary entries: ``token`` is the decoded text (the pipeline's
    ``token_str``), ``raw_token`` the vocabulary entry."""
    import copy
    import importlib

    from transformers import pipeline

    from models.registry import catalogue as registry
    from models.runtime.loading import LoadedModel

    model, tokenizer = tiny_roberta
    reference = pipeline("fill-mask", model=copy.deepcopy(model), tokenizer=tokenizer, device="cpu")
    key = "test/tiny-roberta"  # an operator-allowed id, served by this in-memory model
    monkeypatch.setenv(registry.EXTRA_MODELS_ENV, key)
    loaded = LoadedModel(registry.get_spec(key), model, tokenizer, torch.device("cpu"), torch.float32, 0)
    monkeypatch.setattr(importlib.import_module("models.mlm.fill_mask"), "load_model", lambda *a, **k: loaded)
    text = "I sat by the [MASK] and watched <mask>."
    ours = fill_mask(key, text, top_k=15)
    expected = reference(ours.text, top_k=15)  # the text with RoBERTa's own mask token
    assert ours.text == "I sat by the <mask> and watched <mask>." and len(expected) == 2
    for mask, ref in zip(ours.masks, expected, strict=True):
        assert [p.token_id for p in mask.predictions] == [r["token"] for r in ref]
        assert [p.token for p in mask.predictions] == [r["token_str"] for r in ref]
        assert [p.raw_token for p in mask.predictions] == tokenizer.convert_ids_to_tokens([r["token"] for r in ref])
    shown = [p for m in ours.masks for p in m.predictions]
    assert any(p.raw_token.startswith("Ġ") and p.token != p.raw_token for p in shown)  # the case tested


@pytest.mark.parametrize("transposed", [True, False], ids=["AMD: W @ x.T", "elsewhere: nn.Linear"])
def test_few_rows_projection_equals_the_linear_layer(mlm_key, mlm_loaded, monkeypatch, transposed):
    """The vocabulary projection of 1-8 gathered positions, in either layout (W @ x.T with
    one row padded to two, as on AMD's CPUs; nn.Linear's elsewhere), gives nn.Linear's logits,
    and outside a gather (e.g. a pipeline sharing the model) the layer is nn.Linear itself."""
    import models.mlm.masked_head as mh
    from models.mlm.masked_head import FEW_ROWS, _ensure_hook, gather_positions

    monkeypatch.setattr(mh, "transposed_few_rows", lambda: transposed)
    model = mlm_loaded.model
    _ensure_hook(model)
    decoder = model.get_output_embeddings()
    torch.manual_seed(0)
    for rows in (1, 2, 3, FEW_ROWS, FEW_ROWS + 1):
        hidden = torch.randn(1, rows, decoder.in_features, dtype=decoder.weight.dtype,
                             device=decoder.weight.device)
        expected = torch.nn.functional.linear(hidden, decoder.weight, decoder.bias)
        with torch.inference_mode():
            assert torch.equal(decoder(hidden), expected)  # no gather: the plain layer
            with gather_positions(model, list(range(rows)), decoder.weight.device):
                got = decoder(hidden)
        assert got.shape == expected.shape
        assert torch.allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_the_projection_layout_follows_the_cpu_vendor(monkeypatch):
    """W @ x.T for a few rows on AMD's CPUs only (MKL's slow path for x @ W.T there); Intel's
    and unknown CPUs keep nn.Linear's layout."""
    import models.mlm.masked_head as mh

    for vendor, transposed in (("AuthenticAMD", True), ("GenuineIntel", False), ("", False)):
        monkeypatch.setattr(mh, "cpu_vendor", lambda v=vendor: v)
        mh.transposed_few_rows.cache_clear()
        assert mh.transposed_few_rows() is transposed, vendor
    mh.transposed_few_rows.cache_clear()


def test_typed_text_takes_the_packed_forward_on_the_cpu(mlm_key, mlm_loaded, reference_pipe, monkeypatch):
    """What a user's fill-mask runs on the CPU for a BERT body: the packed forward (the
    text's real tokens, no attention mask to build), the head at the masks only; answers are
    the pipeline's. With another view's hook on the model, transformers' forward instead."""
    import models.mlm.fill_mask as fm

    seen = []
    real = fm.packed_last_states_at

    def spy(model, ids, mask, rows, cols):
        seen.append((tuple(ids.shape), int(mask.sum()), rows.tolist(), cols.tolist()))
        return real(model, ids, mask, rows, cols)

    monkeypatch.setattr(fm, "packed_last_states_at", spy)
    text = "The capital of France is [MASK]."
    expected = reference_pipe(text, top_k=5)
    ours = fill_mask(mlm_key, text, top_k=5)
    ids = mlm_loaded.tokenizer(text)["input_ids"]
    tokens, mask_at = len(ids), ids.index(mlm_loaded.tokenizer.mask_token_id)
    if mlm_loaded.device.type == "cpu":  # the text's real tokens; the last layer's state at the mask only
        assert fm.packs(mlm_loaded) and seen == [((1, tokens), tokens, [0], [mask_at])]
    else:
        assert not fm.packs(mlm_loaded) and not seen  # a GPU runs transformers' forward
    exact = mlm_loaded.dtype == torch.float32
    if exact:
        assert [p.token_id for p in ours.masks[0].predictions] == [r["token"] for r in expected]
    ref_scores = {r["token"]: r["score"] for r in expected}
    for p in ours.masks[0].predictions:
        if p.token_id in ref_scores:
            assert abs(p.score - ref_scores[p.token_id]) <= (1e-5 if exact else 2e-3)

    seen.clear()
    layer = mlm_loaded.model.base_model.encoder.layer[0]
    handle = layer.attention.register_forward_hook(lambda *a: None)  # as the attention views hook
    try:
        assert not fm.packs(mlm_loaded)
        hooked = fill_mask(mlm_key, text, top_k=5)
    finally:
        handle.remove()
    assert not seen
    assert [p.token_id for p in hooked.masks[0].predictions] == [p.token_id for p in ours.masks[0].predictions]


def test_a_second_segment_keeps_transformers_forward(mlm_loaded, monkeypatch):
    """The packed forward reads segment 0 only: texts with token type ids of another segment
    go through transformers' forward, with the same logits as the model's own call."""
    import models.mlm.fill_mask as fm

    if not fm.packs(mlm_loaded):
        pytest.skip("the packed forward runs on the CPU only")
    calls = []
    monkeypatch.setattr(fm, "packed_last_states_at", lambda *a: calls.append(a))
    tok = mlm_loaded.tokenizer
    enc = fm.encode_masks(mlm_loaded, "A [MASK] day.", fm.mask_spans("A [MASK] day."))
    pair = tok("A [MASK] day.", "It rained.", return_tensors="pt")
    assert pair["token_type_ids"].any()
    enc = fm._Encoded(dict(pair), enc.positions, enc.spans, enc.model_text)
    got = fm._forward_batch([(mlm_loaded, enc), (mlm_loaded, enc)])
    assert not calls
    with torch.inference_mode():
        want = mlm_loaded.model(**pair).logits[0, enc.positions]
    for logits in got:
        torch.testing.assert_close(logits, want.float(), atol=1e-4, rtol=0)


def test_forward_path_says_which_forward_and_layout(mlm_loaded, monkeypatch):
    """What the bench prints: the packed forward on the CPU for a BERT body, and the
    vocabulary product's layout with the vendor that chose it."""
    import models.mlm.fill_mask as fm

    for vendor, transposed, layout in (("AuthenticAMD", True, "W @ x.T"), ("GenuineIntel", False, "nn.Linear's")):
        monkeypatch.setattr(fm, "cpu_vendor", lambda v=vendor: v)
        monkeypatch.setattr(fm, "transposed_few_rows", lambda t=transposed: t)
        said = fm.forward_path(mlm_loaded)
        if mlm_loaded.device.type == "cpu":
            assert "packed BERT forward" in said and layout in said and vendor in said
        else:  # a BERT body on a GPU: replayed as CUDA graphs (tests/unit/runtime/test_cuda_graphs.py)
            assert "CUDA graphs" in said and "not a CPU" in said


def test_the_bench_compares_equal_answers_and_names_the_path(mlm_key, mlm_loaded, monkeypatch):
    """bench.fill_mask, tiny, on the session's model: it checks that both sides give the same
    top-5 before timing, and its report names the forward and layout it measured. (Its
    ``set_device`` would empty the model cache under the other tests: held to a no-op.)"""
    import models
    from bench import fill_mask as bench
    from models.mlm.fill_mask import forward_path

    monkeypatch.setattr(models, "set_device", lambda name: mlm_loaded.device)
    report = bench.run(mlm_key, runs=2, repeat=1, quiet=True)
    assert models.load_model(models.get_spec(mlm_key), head="mlm") is mlm_loaded  # the cache kept the session's model
    assert report["model"] == mlm_key and report["path"] == forward_path(mlm_loaded)
    assert set(report["inputs"]) == {"one mask", "three masks"}
    for row in report["inputs"].values():
        assert row["ours_ms"]["median"] > 0 and row["pipeline_ms"]["median"] > 0
        assert row["ratio"]["median"] == pytest.approx(row["ours_ms"]["median"] / row["pipeline_ms"]["median"], rel=1e-9)
