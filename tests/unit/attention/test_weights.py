"""extract_attention on the embedded models: parity with transformers, rows, segments;
statistics and rollout on hand-made matrices; other families on tiny random-init models."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from helpers import REPO
from models import (
    HEAD_FILTERS,
    InputError,
    ModelUnavailableError,
    UnknownModelError,
    head_statistics,
    attention_rollout,
    extract_attention,
    filter_heads,
    get_spec,
    load_model,
)
from models import get_device
from models.registry import catalogue as registry

# float32 on the CPU; the app runs float16 on a GPU (the direct reference call stays float32).
# float16 keeps about three digits: a weight (at most 1) is rounded by up to 4.9e-4 (half its
# epsilon, 9.8e-4), and a row's sum by as much; 2e-3 leaves room for the rounding upstream.
HALF_ATOL = 2e-3
ATOL = 1e-5 if get_device().type == "cpu" else HALF_ATOL

EMBEDDED = ["minilm-l6", "minilm-mlm", "splade-tiny"]
BANK_A = "I sat by the river bank."
BANK_B = "I deposited cash at the bank."


@pytest.fixture(scope="module")
def bank_pair():
    return extract_attention("minilm-l6", BANK_A, BANK_B)


def _direct_attentions(key: str, text: str, text_pair: str | None = None) -> np.ndarray:
    """The reference: transformers itself, loaded from the same files, eager attention."""
    from transformers import AutoModel, AutoTokenizer

    folder = registry.local_path(get_spec(key))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    enc = tokenizer(text, text_pair, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    return torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, T, T)


@pytest.mark.parametrize("key", EMBEDDED)
def test_weights_equal_a_direct_transformers_call(key):
    result = extract_attention(key, BANK_A, BANK_B)
    direct = _direct_attentions(key, BANK_A, BANK_B)
    assert result.weights.dtype == np.float32
    assert result.weights.shape == direct.shape
    np.testing.assert_allclose(result.weights, direct, atol=ATOL, rtol=1e-4)


def test_on_the_cpu_the_linear_layers_run_on_onednn_and_the_weights_stay_transformers(monkeypatch):
    """The extraction's linear layers take the oneDNN path where ``embed`` and fill-mask do (a
    CPU, float32, no gradients: models/runtime/onednn.py), the fused GELU and residual adds
    included; the weights still equal transformers' own call on its own copy of the model."""
    from helpers import spy_onednn
    from models.runtime import onednn_enabled

    loaded = load_model(get_spec("minilm-l6"), attn_implementation="eager")
    if not (onednn_enabled() and loaded.device.type == "cpu" and loaded.dtype == torch.float32):
        pytest.skip("the oneDNN path is for float32 on an x86-64 CPU")
    calls = spy_onednn(monkeypatch)
    text = "The river bank was muddy after the storm, said the banker."
    result = extract_attention("minilm-l6", text)
    tokens = len(result.tokens)
    layers = loaded.model.config.num_hidden_layers
    from models.runtime.onednn import onednn_extras

    # q, k, v; the intermediate (GELU fused) and both outputs (residual add fused) where this
    # CPU's check of the fused ops passed, else all six products plain
    fused = onednn_extras()["fused"]
    expected = {"linear": 3, "linear+gelu": 1, "linear+add": 2} if fused else {"linear": 6}
    for op in ("linear", "linear+gelu", "linear+add"):
        seen = [shape for name, _, shape in calls if name == op and shape[:2] == (1, tokens)]
        assert len(seen) == expected.get(op, 0) * layers, (op, seen)
    np.testing.assert_allclose(result.weights, _direct_attentions("minilm-l6", text, None), atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("key", EMBEDDED)
def test_shape_and_rows_sum_to_one(key):
    result = extract_attention(key, "The quick brown fox jumps over the lazy dog.")
    config = load_model(get_spec(key)).model.config
    t = len(result.tokens)
    assert result.weights.shape == (config.num_hidden_layers, config.num_attention_heads, t, t)
    assert (result.weights >= 0).all()
    np.testing.assert_allclose(result.weights.sum(-1), 1.0, atol=ATOL)
    assert result.segment_ids == (0,) * t and result.segment_source == "single text"


def test_default_path_gives_no_weights_so_eager_is_used():
    """The embedded models default to SDPA, which returns no weights: eager is needed."""
    default = load_model(get_spec("minilm-l6"))
    assert default.model.config._attn_implementation == "sdpa"
    enc = default.tokenizer("A short text.", return_tensors="pt").to(default.device)
    with torch.no_grad():
        out = default.model(**enc, output_attentions=True)
    assert not out.attentions  # SDPA builds no weight matrix
    assert extract_attention("minilm-l6", "A short text.").attn_implementation == "eager"


def test_statistics_are_computed_once_per_result(bank_pair):
    first = head_statistics(bank_pair)
    assert head_statistics(bank_pair) is first
    rollout = attention_rollout(bank_pair)
    assert attention_rollout(bank_pair) is rollout
    np.testing.assert_array_equal(rollout, attention_rollout(bank_pair.weights))
    np.testing.assert_allclose(first.entropy, head_statistics(bank_pair.weights, bank_pair.cls_positions,
                                                              bank_pair.sep_positions).entropy)


def test_pair_uses_the_bert_pair_format_and_token_type_ids(bank_pair):
    assert bank_pair.tokens == (
        "[CLS]", "i", "sat", "by", "the", "river", "bank", ".", "[SEP]",
        "i", "deposited", "cash", "at", "the", "bank", ".", "[SEP]",
    )
    assert bank_pair.segment_ids == (0,) * 9 + (1,) * 8
    assert bank_pair.segment_source == "token_type_ids"
    assert bank_pair.cls_positions == (0,)
    assert bank_pair.sep_positions == (8, 16)
    assert bank_pair.special_tokens_mask == (1,) + (0,) * 7 + (1,) + (0,) * 7 + (1,)
    assert bank_pair.text_pair == BANK_B


def test_results_are_cached_and_read_only():
    first = extract_attention("splade-tiny", "A cached sentence.")
    assert extract_attention("splade-tiny", "A cached sentence.") is first
    with pytest.raises(ValueError, match="read-only"):
        first.weights[0, 0, 0, 0] = 1.0


def test_empty_second_text_means_a_single_text():
    result = extract_attention("splade-tiny", BANK_A, "  ")
    assert result.text_pair is None and set(result.segment_ids) == {0}


@pytest.mark.parametrize(
    ("key", "text", "pair", "error", "words"),
    [
        ("minilm-l6", "", None, InputError, "empty"),
        ("minilm-l6", "ok", "", None, None),
        ("minilm-l6", "word " * 600, None, InputError, "at most 512 tokens"),
        ("not-a-model", "ok", None, UnknownModelError, "Choose one of"),
        ("minilm-l6", 42, None, InputError, "must be a string"),
    ],
)
def test_bad_input_is_a_clear_error(key, text, pair, error, words):
    if error is None:
        assert extract_attention(key, text, pair).text_pair is None
        return
    with pytest.raises(error, match=words):
        extract_attention(key, text, pair)


def test_unavailable_online_model_says_so(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(registry, "hub_cached", lambda repo_id: False)
    with pytest.raises(ModelUnavailableError, match="not available"):
        extract_attention("roberta-base", "Hello.")


# --- statistics on a hand-made matrix ------------------------------------------------------

# One layer, three heads, three tokens: [CLS] x [SEP] (cls at 0, sep at 2).
HAND = np.array(
    [
        [
            [[1, 0, 0], [1, 0, 0], [1, 0, 0]],  # head 0: everything on [CLS]
            [[1 / 3] * 3] * 3,  # head 1: uniform
            [[0.5, 0.5, 0], [0.25, 0.25, 0.5], [0, 1, 0]],  # head 2: mixed
        ]
    ],
    dtype=np.float32,
)


def test_head_statistics_on_a_hand_made_matrix():
    s = head_statistics(HAND, cls_positions=[0], sep_positions=[2])
    assert s.entropy.shape == (1, 3)
    # head 0: one-hot rows; row 0 is also "self", row 1 puts all on its previous token
    expected_0 = dict(entropy=0, entropy_ratio=0, to_cls=1, to_sep=0, to_self=1 / 3,
                      to_prev=(1 + 0) / 2, to_next=(0 + 0) / 2, max_weight=1)
    # head 1: every row uniform over 3 tokens: entropy log2(3) bits
    third = 1 / 3
    expected_1 = dict(entropy=math.log2(3), entropy_ratio=1, to_cls=third, to_sep=third,
                      to_self=third, to_prev=third, to_next=third, max_weight=third)
    # head 2: row entropies 1, 1.5, 0 bits
    expected_2 = dict(entropy=(1 + 1.5 + 0) / 3, entropy_ratio=(2.5 / 3) / math.log2(3),
                      to_cls=(0.5 + 0.25 + 0) / 3, to_sep=(0 + 0.5 + 0) / 3,
                      to_self=(0.5 + 0.25 + 0) / 3, to_prev=(0.25 + 1) / 2,
                      to_next=(0.5 + 0.5) / 2, max_weight=(0.5 + 0.5 + 1) / 3)
    for head, expected in enumerate([expected_0, expected_1, expected_2]):
        for name, value in expected.items():
            assert getattr(s, name)[0, head] == pytest.approx(value, abs=1e-6), (head, name)
    records = s.to_records()
    assert [(r["layer"], r["head"]) for r in records] == [(0, 0), (0, 1), (0, 2)]
    assert records[2]["to_prev"] == pytest.approx(0.625)


def test_filters_on_the_hand_made_matrix():
    s = head_statistics(HAND, cls_positions=[0], sep_positions=[2])
    assert filter_heads(s, "attend to the previous token") == [(0, 0), (0, 2)]
    assert filter_heads(s, "attend to [CLS]") == [(0, 0)]
    assert filter_heads(s, "attend to [SEP]") == []
    assert filter_heads(s, "broad (high entropy)") == [(0, 1)]
    assert filter_heads(s, "attend to the next token") == [(0, 2)]
    with pytest.raises(InputError, match="Unknown filter"):
        filter_heads(s, "heads I like")
    assert set(HEAD_FILTERS) >= {"attend to the previous token", "attend to [SEP]"}


def test_statistics_of_a_real_result(bank_pair):
    s = head_statistics(bank_pair)
    assert s.to_cls.shape == (6, 12)
    # the [CLS] share is the mean over rows of column 0, the [SEP] share columns 8 and 16
    w = bank_pair.weights.astype(np.float64)
    np.testing.assert_allclose(s.to_cls, w[..., 0].mean(-1), atol=1e-6)
    np.testing.assert_allclose(s.to_sep, (w[..., 8] + w[..., 16]).mean(-1), atol=1e-6)
    assert ((s.entropy_ratio >= 0) & (s.entropy_ratio <= 1 + 1e-6)).all()


# --- rollout -------------------------------------------------------------------------------


def test_rollout_by_hand():
    # layer 0: both heads on token 0 / the head average; layer 1: everything on token 1
    weights = np.array(
        [
            [[[1, 0], [1, 0]], [[1, 0], [1, 0]]],
            [[[0, 1], [0, 1]], [[0, 1], [0, 1]]],
        ],
        dtype=np.float32,
    )
    rollout = attention_rollout(weights)
    # (A + I) renormalised: layer 0 -> [[1, 0], [.5, .5]]; layer 1 -> [[.5, .5], [0, 1]]
    np.testing.assert_allclose(rollout[0], [[1, 0], [0.5, 0.5]], atol=1e-6)
    # layer 1 · layer 0 = [[.5*1 + .5*.5, .5*.5], [.5, .5]]
    np.testing.assert_allclose(rollout[1], [[0.75, 0.25], [0.5, 0.5]], atol=1e-6)


def test_rollout_averages_heads():
    weights = np.array([[[[1, 0], [1, 0]], [[0, 1], [0, 1]]]], dtype=np.float32)
    # head mean [[.5, .5], [.5, .5]] + I, rows renormalised
    np.testing.assert_allclose(attention_rollout(weights)[0], [[0.75, 0.25], [0.25, 0.75]], atol=1e-6)


def test_rollout_of_a_real_result_keeps_rows_distributions(bank_pair):
    rollout = attention_rollout(bank_pair.weights)
    assert rollout.shape == (6, 17, 17)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-5)
    with pytest.raises(InputError, match="shape"):
        attention_rollout(np.ones((2, 3)))


# --- other families, tiny random-init models in a fake HF cache ---------------------------

_OTHER_FAMILIES = textwrap.dedent(
    """
    import json, sys, torch
    from transformers import AutoModel, AutoTokenizer
    from models import extract_attention
    from models.registry.catalogue import get_spec
    from models.runtime.loading import dtype_for, get_device
    out = {}
    for key in ("roberta-base", "modernbert-base"):
        r = extract_attention(key, "The river bank.", "Cash at the bank.")
        name = get_spec(key).source
        tok = AutoTokenizer.from_pretrained(name)
        model = AutoModel.from_pretrained(name, attn_implementation="eager").eval()
        enc = tok("The river bank.", "Cash at the bank.", return_tensors="pt")
        with torch.no_grad():
            direct = torch.stack([a[0] for a in model(**enc, output_attentions=True).attentions])
        out[key] = {
            "tokens": list(r.tokens), "segments": list(r.segment_ids), "source": r.segment_source,
            "impl": r.attn_implementation, "cls": list(r.cls_positions), "sep": list(r.sep_positions),
            "max_diff": float((torch.from_numpy(r.weights) - direct).abs().max()),
            "row_err": float(abs(r.weights.sum(-1) - 1).max()),
            "dtype": str(dtype_for(get_device())),  # what extract_attention ran in
        }
    print(json.dumps(out))
    """
)


def _tiny_roberta(folder) -> None:
    """A byte-level BPE tokenizer trained on a few lines, and a 2-layer random RobertaModel."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    folder.mkdir()
    bpe = ByteLevelBPETokenizer()
    lines = ["The river bank.", "Cash at the bank.", "I sat by the river."] * 20
    bpe.train_from_iterator(lines, vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    vocab, merges = str(folder / "vocab.json"), str(folder / "merges.txt")
    RobertaTokenizer(vocab=vocab, merges=merges).save_pretrained(folder)
    config = RobertaConfig(vocab_size=bpe.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=2, intermediate_size=64, max_position_embeddings=130)
    RobertaModel(config).save_pretrained(folder)


def _tiny_modernbert(folder) -> None:
    """The embedded BERT vocabulary with ModernBERT's input names, a 2-layer random ModernBERT."""
    from transformers import ModernBertConfig, ModernBertModel

    src = registry.local_path(get_spec("minilm-l6"))
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(src / name, folder / name)
    config_path = folder / "tokenizer_config.json"
    tok_config = json.loads(config_path.read_text())
    tok_config["model_input_names"] = ["input_ids", "attention_mask"]  # as ModernBERT's own
    config_path.write_text(json.dumps(tok_config))
    config = ModernBertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64, pad_token_id=0, cls_token_id=101, sep_token_id=102)
    ModernBertModel(config).save_pretrained(folder)


def test_other_families_on_tiny_random_init_models(tmp_path):
    """RoBERTa (no token_type_ids: segments from </s></s>) and ModernBERT (SDPA by default),
    random-init: plumbing only, the weights mean nothing."""
    from helpers import fake_hub_cache

    cache = tmp_path / "hub"
    _tiny_roberta(tmp_path / "roberta")
    _tiny_modernbert(tmp_path / "modernbert")
    fake_hub_cache(cache, "roberta-base", tmp_path / "roberta")
    fake_hub_cache(cache, "answerdotai/ModernBERT-base", tmp_path / "modernbert")
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", _OTHER_FAMILIES], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])

    roberta = data["roberta-base"]
    tokens = roberta["tokens"]
    assert tokens[0] == "<s>" and tokens[-1] == "</s>"
    double = tokens.index("</s>")  # <s> A </s></s> B </s>
    assert tokens[double + 1] == "</s>"
    assert roberta["segments"] == [0] * (double + 1) + [1] * (len(tokens) - double - 1)
    assert roberta["source"] == "special-token positions"
    assert roberta["cls"] == [0] and roberta["sep"] == [double, double + 1, len(tokens) - 1]

    modern = data["modernbert-base"]
    assert modern["tokens"][:5] == ["[CLS]", "the", "river", "bank", "."]
    sep = modern["tokens"].index("[SEP]")
    assert modern["segments"] == [0] * (sep + 1) + [1] * (len(modern["tokens"]) - sep - 1)
    assert modern["source"] == "special-token positions"
    for family in (roberta, modern):
        assert family["impl"] == "eager"
        # Against the float32 reference: float32 here; float16 on a GPU (3.1e-5 on an H200).
        tol = 1e-5 if family["dtype"] == "torch.float32" else HALF_ATOL
        assert family["max_diff"] < tol and family["row_err"] < tol


def test_clear_cache_forgets_attention_results(monkeypatch):
    from models.runtime import loading
    from models.attention.weights import RESULT_CACHE

    # The loaded models and tokenizers other tests share stay untouched: stand-ins are cleared.
    monkeypatch.setattr(loading, "MODEL_CACHE", loading.ModelCache(1))
    monkeypatch.setattr(loading, "_tokenizers", {})
    clear_cache = loading.clear_cache
    first = extract_attention("minilm-l6", "Cached once.")
    assert extract_attention("minilm-l6", "Cached once.") is first
    clear_cache()
    assert RESULT_CACHE.keys() == []
    assert extract_attention("minilm-l6", "Cached once.") is not first
