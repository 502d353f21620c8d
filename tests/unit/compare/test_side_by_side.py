"""Variant comparison: architecture facts from configs, recipes, one input through many models."""

from __future__ import annotations

import json
import re

import pytest
import torch
from transformers import AutoModel, AutoModelForMaskedLM

from models import (
    CapabilityError,
    InputError,
    ModelUnavailableError,
    UnknownModelError,
    architecture_table,
    compare_fill_mask,
    compare_tokens,
    fill_mask,
    list_models,
    tokenize,
    training_recipes,
)
from components.compare.tab import registry_models
from models.compare.architecture import (
    CONFIGS,
    architecture_facts,
    config_file,
    config_index,
    instantiate,
    load_config,
    raw_config,
)
from models.registry.catalogue import local_path
from models.compare.side_by_side import normalise_piece
from models.registry.catalogue import SPECS, get_spec, local_path

# AutoModel.from_config parameter counts published with the issue (independent of this code).
PUBLISHED = {
    "bert-base": 109_482_240,
    "roberta-base": 124_645_632,
    "distilbert-base": 66_362_880,
    "albert-base": 11_683_584,
    "modernbert-base": 149_014_272,
}
EMBEDDED_MLM = ["minilm-mlm", "splade-tiny"]


@pytest.fixture(scope="module")
def table():
    return {f.model_key: f for f in architecture_table()}


def real_count(model) -> int:
    """What transformers itself reports: parameters() yields each shared tensor once."""
    return sum(p.numel() for p in model.parameters())


# --- configs ----------------------------------------------------------------------------


def in_the_table(spec) -> bool:
    """The table's models: encoders, Ettin's pairs apart (no stored official config: the Hub is not
    reachable here; they load from the Hub like the others)."""
    return not spec.is_decoder and not spec.key.startswith("ettin-")


def test_every_registry_model_has_a_config():
    online = config_index()["online"]
    for spec in filter(in_the_table, SPECS):
        if spec.miniature:  # the mini zoo: its own folder's config, written by its trainer
            assert config_file(spec.key)[0] == local_path(spec) / "config.json"
        elif spec.embedded:
            assert spec.key in config_index()["embedded"]
        else:
            assert spec.key in online, spec.key
            assert online[spec.key]["checkpoint"] == spec.source
            assert online[spec.key]["source_path"] == f"{spec.source}/resolve/main/config.json"
            assert (CONFIGS / online[spec.key]["config"]).is_file()


def test_online_configs_keep_their_original_key_names():
    distil = raw_config("distilbert-base")  # DistilBERT's own names, not BERT's
    assert {"dim", "n_layers", "n_heads", "hidden_dim", "sinusoidal_pos_embds"} <= set(distil)
    assert "hidden_size" not in distil
    modern = raw_config("modernbert-base")  # the published legacy keys, not transformers 5's
    assert modern["global_attn_every_n_layers"] == 3 and modern["local_attention"] == 128
    assert "layer_types" not in modern
    assert raw_config("deberta-v3-base")["pos_att_type"] == "p2c|c2p"


def test_embedded_configs_are_read_from_their_folders():
    for key in ("minilm-mlm", "splade-tiny", "minilm-l6"):
        folder = local_path(get_spec(key))
        assert raw_config(key) == json.loads((folder / "config.json").read_text())


# --- parameter counts -------------------------------------------------------------------


@pytest.mark.parametrize(("key", "count"), sorted(PUBLISHED.items()))
def test_published_parameter_counts(table, key, count):
    assert table[key].params_total == count


@pytest.mark.parametrize("key", ["splade-tiny", "electra-small-generator", "albert-base", "distilbert-base"])
def test_meta_counts_equal_a_real_from_config_count(table, key):
    config = load_config(key)
    torch.manual_seed(0)
    base = AutoModel.from_config(config)  # real tensors on the CPU
    assert table[key].params_total == real_count(base)
    mlm = AutoModelForMaskedLM.from_config(config)
    assert table[key].params_mlm_total == real_count(mlm)


def test_embedded_counts_equal_the_loaded_weights(table, mlm_loaded):
    from models import load_model

    assert table["splade-tiny"].params_mlm_total == real_count(mlm_loaded.model)
    assert table["minilm-l6"].params_total == real_count(load_model("minilm-l6").model)


def distinct_storage_count(model) -> int:
    """Parameters counted by where their data lives: a tied or shared tensor once."""
    seen: dict[int, int] = {}
    for _, p in model.named_parameters(remove_duplicate=False):
        seen[p.data_ptr()] = p.numel()
    return sum(seen.values())


@pytest.mark.parametrize("key", ["splade-tiny", "albert-base"])
def test_parts_equal_a_real_model_counted_by_storage(table, key):
    config = load_config(key)
    base = AutoModel.from_config(config)  # real tensors; ALBERT shares its layer weights
    mlm = AutoModelForMaskedLM.from_config(config)  # decoder tied to the word embeddings
    assert mlm.get_output_embeddings().weight.data_ptr() == mlm.get_input_embeddings().weight.data_ptr()
    facts = table[key]
    assert facts.params_total == distinct_storage_count(base)
    assert facts.params_embedding == distinct_storage_count(base.embeddings)
    assert facts.params_pooler == distinct_storage_count(base.pooler)
    assert facts.params_mlm_total == distinct_storage_count(mlm)


def test_tied_decoder_is_counted_once(table):
    bert = table["bert-base"]
    # word + position + segment tables, and the embedding LayerNorm (weight and bias)
    assert bert.params_embedding == (30522 + 512 + 2) * 768 + 2 * 768
    assert bert.params_pooler == 768 * 768 + 768
    # BERT's MLM head: transform dense + LayerNorm + the decoder's bias; its weight is tied
    assert bert.params_mlm_head == 768 * 768 + 768 + 2 * 768 + 30522
    assert bert.params_mlm_total == bert.params_total - bert.params_pooler + bert.params_mlm_head


def test_instantiation_allocates_nothing():
    model = instantiate(load_config("bert-large"), masked_lm=True)
    assert {p.device.type for p in model.parameters()} == {"meta"}


# --- the other facts --------------------------------------------------------------------


def test_every_family_is_present(table):
    assert {f.family for f in table.values()} >= {
        "bert", "roberta", "distilbert", "albert", "deberta-v2", "modernbert", "electra"
    }
    assert set(table) == {s.key for s in SPECS if in_the_table(s)}


def test_sizes_match_the_configs(table):
    large = table["bert-large"]
    assert (large.layers, large.hidden, large.heads, large.ffn) == (24, 1024, 16, 4096)
    distil = table["distilbert-base"]
    assert (distil.layers, distil.hidden, distil.ffn, distil.vocab_size) == (6, 768, 3072, 30522)
    albert = table["albert-base"]
    assert (albert.embedding_size, albert.weight_sets, albert.layers) == (128, 1, 12)
    assert table["deberta-v3-base"].vocab_size == 128100
    assert table["electra-small-generator"].embedding_size == 128


def test_schemes(table):
    modern = table["modernbert-base"]
    assert modern.position_scheme.startswith("rotary")
    assert modern.activation.startswith("GeGLU")
    assert "local/global" in modern.attention_pattern and "128-token window" in modern.attention_pattern
    assert modern.max_context == 8192
    assert table["deberta-v3-base"].position_scheme.startswith("relative, disentangled")
    assert table["bert-base"].position_scheme == "absolute (learned)"
    assert table["bert-base"].attention_pattern.startswith("full")
    assert table["albert-base"].activation == "GELU (tanh approximation)"
    assert table["roberta-base"].max_context == 512  # 514 slots, 2 reserved by the padding offset


def test_tokenizer_kinds(table):
    assert table["bert-base"].tokenizer_kind == "WordPiece"
    assert table["minilm-mlm"].tokenizer_kind == "WordPiece"
    assert table["roberta-base"].tokenizer_kind == "BPE (byte-level)"
    assert table["modernbert-base"].tokenizer_kind == "BPE (byte-level)"
    assert table["albert-base"].tokenizer_kind.startswith("SentencePiece")
    assert table["deberta-v3-base"].tokenizer_kind.startswith("SentencePiece")
    assert all(f.tokenizer_kind_from for f in table.values())


def test_recipes_cite_their_papers():
    recipes = training_recipes()
    keys = {s.key for s in SPECS}
    covered = set()
    for r in recipes:
        assert r.paper_title and r.paper_authors and 2017 < r.paper_year < 2030
        assert re.fullmatch(r"\d{4}\.\d{5}", r.arxiv)
        assert r.arxiv in r.citation and str(r.paper_year) in r.citation
        assert set(r.applies_to) <= keys
        covered |= set(r.applies_to)
    assert {s.key for s in SPECS if not s.embedded and in_the_table(s)} <= covered
    by_model = {r.model: r for r in recipes}
    assert by_model["BERT"].nsp.startswith("yes") and by_model["RoBERTa"].nsp.startswith("no")
    assert by_model["RoBERTa"].masking.startswith("dynamic")
    assert by_model["DistilBERT"].distillation.startswith("yes")
    assert "duplicated 10 times" in by_model["BERT"].masking
    # all-MiniLM-L6-v2 is every second layer of the paper's 12-layer MiniLM, then fine-tuned:
    # its row must not present the paper's recipe as the 6-layer model's own
    minilm = next(r for r in recipes if "minilm-l6" in r.applies_to)
    assert "nreimers/MiniLM-L6-H384-uncased" in minilm.data and "every second" in minilm.distillation
    assert "contrastive" in minilm.objective and "1B sentence pairs" in minilm.data_size


# --- one input, several models ----------------------------------------------------------

TEXT = "The capital of France is [MASK]. The <mask> sat on the mat."


COMPARED = EMBEDDED_MLM + ["bert-base", "minilm-l6"]


def runnable(keys, need_mlm: bool) -> list[str]:
    """The keys the registry lists as available here (with an MLM head when asked), in order."""
    info = {m.key: m for m in list_models()}
    return [k for k in keys if info[k].available and (info[k].has_mlm_head or not need_mlm)]


@pytest.fixture(scope="module")
def compared():
    return compare_fill_mask(COMPARED, TEXT, top_k=5)


def test_side_by_side_equals_single_model_fill_mask(compared):
    # the embedded MLMs always; bert-base too where the Hub is used and reachable
    assert [r.model_key for r in compared.results] == runnable(COMPARED, need_mlm=True)
    for result in compared.results:
        single = fill_mask(result.model_key, TEXT, top_k=5)
        assert len(result.masks) == 2
        for ours, theirs in zip(result.masks, single.masks):
            assert [p.token_id for p in ours.predictions] == [p.token_id for p in theirs.predictions]
            assert [p.score for p in ours.predictions] == pytest.approx([p.score for p in theirs.predictions], abs=1e-6)
    # both spellings became each model's own mask token
    for key, model_text in compared.model_texts:
        assert model_text.count(get_spec(key).mask_token) == 2


def test_agreement_is_the_overlap_of_the_top_k(compared):
    for agreement in compared.agreement:
        lists = [
            {normalise_piece(p.raw_token) for p in r.masks[agreement.index].predictions}
            for r in compared.results
        ]
        assert set(agreement.shared) == set.intersection(*lists)
        votes = dict(agreement.votes)
        assert set(votes) == set.union(*lists)
        for word, n in votes.items():
            assert n == sum(word in words for words in lists)


def test_unavailable_and_headless_models_are_listed_with_why(compared):
    skipped = {s.model_key: s.reason for s in compared.skipped}
    assert "masked-LM head" in skipped["minilm-l6"]
    bert = next(m for m in list_models() if m.key == "bert-base")
    if bert.available:
        pytest.skip("bert-base can be loaded on this machine")
    assert "not available" in skipped["bert-base"]


def test_normalise_piece():
    assert [normalise_piece(p) for p in ("##ing", "Ġcat", "▁Cat", "dog", "Ġ")] == ["ing", "cat", "cat", "dog", ""]


@pytest.mark.parametrize(
    ("keys", "text", "error", "words"),
    [
        ([], TEXT, InputError, "at least one"),
        (["splade-tiny"], "no mask here", InputError, "no mask"),
        (["splade-tiny"], "", InputError, "empty"),
        (["not-a-model"], TEXT, UnknownModelError, "Unknown model"),
    ],
)
def test_bad_input(keys, text, error, words):
    with pytest.raises(error, match=words):
        compare_fill_mask(keys, text)


def test_nothing_runnable_is_an_error():
    with pytest.raises((ModelUnavailableError, CapabilityError), match="masked-LM head"):
        compare_fill_mask(["minilm-l6"], TEXT)


def test_compare_tokens_shows_wordpiece_continuations():
    text = "Tokenization is unbelievably useful."
    result = compare_tokens(["splade-tiny", "minilm-l6", "roberta-base"], text)
    assert [m.model_key for m in result.models] == runnable(["splade-tiny", "minilm-l6", "roberta-base"], False)
    for pieces in result.models[:2]:  # the embedded WordPiece models
        reference = tokenize(pieces.model_key, text)
        assert pieces.tokens == reference.tokens
        assert pieces.pieces == tuple(t for t in reference.tokens if t not in ("[CLS]", "[SEP]"))
        assert pieces.piece_count == len(pieces.pieces)
        assert any(p.startswith("##") for p in pieces.pieces)
        assert pieces.continuation_count == sum(p.startswith("##") for p in pieces.pieces)
    roberta = next(m for m in list_models() if m.key == "roberta-base")
    if not roberta.available:
        assert [s.model_key for s in result.skipped] == ["roberta-base"]
        assert "not available" in result.skipped[0].reason


def test_operator_added_models_are_refused_with_the_true_reason(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no reachability probe
    monkeypatch.setenv("ENCODER_LAB_EXTRA_MODELS", "acme/tiny-mlm")
    assert "acme/tiny-mlm" in {m.key for m in list_models()}  # the other tabs list it
    with pytest.raises(CapabilityError, match="operator-added models have no stored config here") as caught:
        architecture_facts("acme/tiny-mlm")
    assert "make setup" not in str(caught.value)
    # ... and the Compare tab offers the registry's own models only
    assert [m.key for m in registry_models(list_models())] == [s.key for s in SPECS]


def test_too_many_models_are_refused(monkeypatch):
    from models.compare import side_by_side as compare

    monkeypatch.setattr(compare, "MAX_COMPARE_MODELS", 2)
    with pytest.raises(InputError, match="At most 2 models per comparison; you chose 3"):
        compare_tokens(["splade-tiny", "minilm-l6", "minilm-mlm", "splade-tiny"], "a text")
    assert len(compare_tokens(["splade-tiny", "minilm-l6", "splade-tiny"], "a text").models) == 2


# --- agreement and word continuations on hand-made inputs ---------------------------------


def _result(key: str, *masks: list[str]):
    """A FillMaskResult whose masks hold these raw tokens, best first."""
    from models import FillMaskResult, MaskPrediction, Prediction

    return FillMaskResult(
        model_key=key, text="", tokens=(), filled_text="",
        masks=tuple(
            MaskPrediction(index=i, position=i + 1, predictions=tuple(
                Prediction(token=r.lstrip("Ġ▁#"), token_id=n, score=1 / (n + 2), raw_token=r) for n, r in enumerate(raws)
            ))
            for i, raws in enumerate(masks)
        ),
    )


def test_agreement_by_hand():
    from models.compare.side_by_side import _agreement

    a = _result("a", ["paris", "lyon", "rome"], ["cat", "dog", "mat"])
    b = _result("b", ["Ġparis", "Ġrome", "Ġnice"], ["Ġdog", "Ġcat", "Ġbird"])
    c = _result("c", ["▁Paris", "▁rome", "▁lyon"], ["▁cat", "▁bird", "▁dog"])
    first, second = _agreement([a, b, c])
    # mask 1: every first guess is "paris" once markers and case are gone
    assert first.top1_agree is True
    assert first.shared == ("paris", "rome")  # in all three top-3s, in a's order
    assert dict(first.votes) == {"paris": 3, "rome": 3, "lyon": 2, "nice": 1}
    # mask 2: first guesses cat / dog / cat differ
    assert second.top1_agree is False
    assert second.shared == ("cat", "dog")
    assert dict(second.votes) == {"cat": 3, "dog": 3, "mat": 1, "bird": 2}
    # one model always agrees with itself
    assert all(m.top1_agree for m in _agreement([b]))


def test_pieces_that_continue_by_hand():
    from models.compare.side_by_side import pieces_that_continue

    text = "Unbelievably, cats sat."
    # Unbel | ievably | , | cats (its span holding the space before it, as byte-level offsets may) | sat | .
    spans = [(0, 5), (5, 12), (12, 13), (13, 18), (19, 22), (22, 23)]
    assert pieces_that_continue(text, spans) == (False, True, False, False, False, False)
    assert pieces_that_continue(text, [(3, 3)]) == (False,)  # an empty span (a marker alone) starts nothing
