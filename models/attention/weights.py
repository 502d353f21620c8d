"""Attention: where each token looks, in every layer and head.

Three steps, as elsewhere in the core: ``_encode`` (the tokenizer's own single or pair
format, segment ids), ``_forward`` (the model call with ``output_attentions=True``: the
only step that touches the device), and plain NumPy after that (statistics, rollout).

A row of an attention matrix belongs to one token (the *query*): it is a probability
distribution over all the tokens of the input (the *keys*), so it sums to 1. An encoder
has no causal mask: a row may put weight on tokens to its right as well as its left.
``causal=True`` adds one (``models.mlm.causal``): every row then puts exactly 0 to its right.

Fast attention kernels (PyTorch SDPA, FlashAttention) never build the weights, so
transformers returns none from them; this module asks the loader for the "eager"
implementation whenever the model's default is not eager.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..mlm.causal import require_causal, with_causal_mask
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import RESULT_CACHES, LoadedModel, ModelCache, check_token_count, get_device, load_model
from ..runtime.onednn import onednn_linears
from ..validation import check_array, check_bool, check_int, check_text

# Thresholds of the one-click head filters: (statistic, at least). Shares are averages
# over the rows (queries) of a head; "broad" compares the entropy with the largest
# possible one, log2(T), for a uniform row.
HEAD_FILTERS: dict[str, tuple[str, float]] = {
    "attend to the previous token": ("to_prev", 0.5),
    "attend to the next token": ("to_next", 0.5),
    "attend to themselves": ("to_self", 0.5),
    "attend to [CLS]": ("to_cls", 0.5),
    "attend to [SEP]": ("to_sep", 0.5),
    "broad (high entropy)": ("entropy_ratio", 0.75),
}
STAT_NAMES = (
    "entropy", "entropy_ratio", "to_cls", "to_sep", "to_self", "to_prev", "to_next", "max_weight"
)


@dataclass(frozen=True, eq=False)
class AttentionResult:
    """``extract_attention``'s result: tokens, their segments, every head's weights."""

    model_key: str
    text: str
    text_pair: str | None
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    segment_ids: tuple[int, ...]  # 0 for the first text, 1 for the second
    segment_source: str  # "token_type_ids", "special-token positions" or "single text"
    special_tokens_mask: tuple[int, ...]  # 1 for [CLS], [SEP], <s>, </s>, ...
    cls_positions: tuple[int, ...]  # where the sequence-start token is ([CLS] or <s>)
    sep_positions: tuple[int, ...]  # where the separator/end tokens are ([SEP] or </s>)
    weights: np.ndarray  # (layers, heads, T, T) float32; weights[l, h, i] sums to 1
    attn_implementation: str  # what produced the weights, e.g. "eager"
    causal: bool = False  # read through a causal mask: weights[..., i, j] == 0 for j > i

    @property
    def nbytes(self) -> int:
        return int(self.weights.nbytes)

    @property
    def num_layers(self) -> int:
        return int(self.weights.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.weights.shape[1])


@dataclass(frozen=True, eq=False)
class HeadStatistics:
    """Per-head statistics, each an array of shape (layers, heads).

    entropy: mean over the rows of the row's entropy, in bits (0 = all weight on one token).
    entropy_ratio: entropy / log2(T), 1 for a head that spreads every row evenly.
    to_cls, to_sep, to_self, to_prev, to_next: mean share of a row's weight on the [CLS]
    position(s), on the [SEP] position(s), on the row's own token, on the token just
    before it (rows 1..T-1) and on the token just after it (rows 0..T-2).
    max_weight: mean over the rows of the row's largest weight.
    """

    entropy: np.ndarray
    entropy_ratio: np.ndarray
    to_cls: np.ndarray
    to_sep: np.ndarray
    to_self: np.ndarray
    to_prev: np.ndarray
    to_next: np.ndarray
    max_weight: np.ndarray

    def to_records(self) -> list[dict]:
        """One record per head: layer, head and every statistic (plain Python floats)."""
        layers, heads = self.entropy.shape
        return [
            {"layer": layer, "head": head}
            | {name: float(getattr(self, name)[layer, head]) for name in STAT_NAMES}
            for layer in range(layers)
            for head in range(heads)
        ]


# --- extract ----------------------------------------------------------------------------

# Recent results, bounded by the bytes of their weights: the tab's views (heatmap, grid,
# statistics, bertviz) all read the same text without running the model again.
RESULT_CACHE = ModelCache(256 * 2**20, part="attention results")
RESULT_CACHES.append(RESULT_CACHE)


@dataclass(frozen=True)
class _Encoded:
    inputs: dict  # tensors for the model, on the CPU
    ids: list[int]
    segment_ids: tuple[int, ...]
    segment_source: str
    special: tuple[int, ...]


def extract_attention(model_key: str, text: str, text_pair: str | None = None,
                      causal: bool = False) -> AttentionResult:
    """Every layer's and head's attention weights on a text (or a text pair).

    With ``text_pair`` the texts are joined in the model's own pair format and the
    segment ids say which token belongs to which text. ``causal``: the same model with a
    causal mask added (each token sees only itself and its left; the upper triangle of
    every matrix is 0); a decoder reads that way by itself (its result says ``causal``
    whatever is asked). Raises ``EncoderLabError`` subclasses on bad input (unknown or
    unavailable model, empty or too long text, a family that cannot take a causal mask).
    """
    spec = catalogue.get_spec(model_key)  # the request's one look-up: the spec travels down
    causal = check_bool(causal, "causal") or spec.is_decoder  # a decoder's attention is triangular already
    if causal and not spec.is_decoder:
        require_causal(spec)
    text = check_text(text)
    if isinstance(text_pair, str) and not text_pair.strip():
        text_pair = None  # an empty second box means "no pair"
    if text_pair is not None:
        text_pair = check_text(text_pair, what="second text")
    key = (model_key, text, text_pair, str(get_device()), causal)
    return RESULT_CACHE.get(key, lambda: _extract(spec, text, text_pair, causal))


def _extract(spec: ModelSpec, text: str, text_pair: str | None, causal: bool = False) -> AttentionResult:
    loaded = attention_model(spec)
    model_key = spec.key
    encoded = _encode(loaded, text, text_pair)
    weights = _forward(loaded, encoded, causal and not spec.is_decoder)  # a decoder: its own mask
    tokenizer = loaded.tokenizer
    return AttentionResult(
        model_key=model_key,
        text=text,
        text_pair=text_pair,
        tokens=tuple(tokenizer.convert_ids_to_tokens(encoded.ids)),
        token_ids=tuple(encoded.ids),
        segment_ids=encoded.segment_ids,
        segment_source=encoded.segment_source,
        special_tokens_mask=encoded.special,
        cls_positions=_positions(encoded, _first_id(tokenizer, "cls_token_id", "bos_token_id")),
        sep_positions=_positions(encoded, _first_id(tokenizer, "sep_token_id", "eos_token_id")),
        weights=weights,
        attn_implementation=str(loaded.model.config._attn_implementation),
        causal=causal,
    )


def attention_model(spec: ModelSpec) -> LoadedModel:
    """The model loaded with eager attention, the implementation that returns weights.

    transformers' default (SDPA, or Flash on a GPU) computes attention without ever
    building the weight matrix, so ``output_attentions`` gives nothing there. The eager copy
    is loaded straight away: loading the default first just to look would keep two copies.
    """
    return load_model(spec, attn_implementation="eager")


def _encode(loaded: LoadedModel, text: str, text_pair: str | None) -> _Encoded:
    tokenizer = loaded.tokenizer
    enc = tokenizer(
        text,
        text_pair,
        truncation=False,
        return_special_tokens_mask=True,
        return_tensors="pt",
        verbose=False,
    )
    ids = enc["input_ids"][0].tolist()
    check_token_count(loaded, len(ids))
    special = tuple(int(m) for m in enc.pop("special_tokens_mask")[0].tolist())
    segment_ids, source = _segments(enc, text_pair is not None)
    inputs = {k: v for k, v in enc.items() if k in tokenizer.model_input_names}
    return _Encoded(inputs, ids, segment_ids, source, special)


def _segments(enc, is_pair: bool) -> tuple[tuple[int, ...], str]:
    """Segment ids: the tokenizer's token_type_ids when it makes them, else derived.

    RoBERTa-style tokenizers (no token_type_ids) mark the pair only with special tokens
    (<s> A </s></s> B </s>): the first text runs up to and including the first special
    token after its last token; everything after belongs to the second text.
    """
    n = enc["input_ids"].shape[1]
    if not is_pair:
        return (0,) * n, "single text"
    if "token_type_ids" in enc:
        return tuple(int(t) for t in enc["token_type_ids"][0].tolist()), "token_type_ids"
    sequence_ids = enc.sequence_ids(0)
    last_a = max(i for i, s in enumerate(sequence_ids) if s == 0)
    return tuple(0 if i <= last_a + 1 else 1 for i in range(n)), "special-token positions"


def _first_id(tokenizer, *names: str) -> int | None:
    for name in names:
        value = getattr(tokenizer, name, None)
        if value is not None:
            return int(value)
    return None


def _positions(encoded: _Encoded, token_id: int | None) -> tuple[int, ...]:
    return tuple(i for i, (t, s) in enumerate(zip(encoded.ids, encoded.special)) if s and t == token_id)


def _forward(loaded: LoadedModel, encoded: _Encoded, causal: bool = False) -> np.ndarray:
    """(layers, heads, T, T) float32 weights, on the CPU."""
    inputs = {k: v.to(loaded.device) for k, v in encoded.inputs.items()}
    if causal:
        inputs = with_causal_mask(loaded.model, inputs)
    # the linear layers on oneDNN where the embeddings and fill-mask take it (a CPU, float32,
    # no gradients: models.runtime.onednn); the attention itself stays transformers' eager code
    with torch.inference_mode(), onednn_linears(loaded.model):
        out = loaded.model(**inputs, output_attentions=True)
    attentions = out.attentions
    if not attentions or any(a is None for a in attentions):
        raise RuntimeError(
            f"{loaded.spec.key} returned no attention weights even with eager attention."
        )
    stacked = torch.stack([a[0] for a in attentions])  # (L, H, T, T)
    weights = stacked.float().cpu().numpy()
    weights.flags.writeable = False  # results are cached and shared: read-only
    return weights


# --- statistics -------------------------------------------------------------------------


def head_statistics(attention, cls_positions=(0,), sep_positions=()) -> HeadStatistics:
    """Per-head statistics of an ``extract_attention`` result, or of a (layers, heads, T, T)
    array whose rows sum to 1 (with the [CLS] / [SEP] positions given).

    Of a result, computed once ([CLS]/[SEP] from its tokens) and kept on the result itself:
    results are cached and immutable, and the tab asks again on every filter click.
    """
    if isinstance(attention, AttentionResult):
        return _derived(attention, "_head_stats", lambda: _head_statistics(
            attention.weights, attention.cls_positions, attention.sep_positions))
    return _head_statistics(attention, cls_positions, sep_positions)


def _head_statistics(weights: np.ndarray, cls_positions, sep_positions) -> HeadStatistics:
    w = check_array(weights, "The attention weights", np.float32)  # float64 would double a 500 MB array
    if w.ndim != 4 or w.shape[2] != w.shape[3]:
        raise InputError(f"Expected weights of shape (layers, heads, T, T); got {w.shape}.")
    t = w.shape[-1]
    logs = np.log2(np.where(w > 0, w, 1.0))  # 0 log 0 = 0
    entropy = -(w * logs).sum(-1).mean(-1)  # (L, H)
    rows = np.arange(t)
    diagonal = w[..., rows, rows]  # (L, H, T)
    prev = w[..., rows[1:], rows[1:] - 1].mean(-1) if t > 1 else np.zeros(w.shape[:2])
    nxt = w[..., rows[:-1], rows[:-1] + 1].mean(-1) if t > 1 else np.zeros(w.shape[:2])
    return HeadStatistics(
        entropy=entropy,
        entropy_ratio=entropy / np.log2(t) if t > 1 else np.zeros_like(entropy),
        to_cls=_share(w, _checked_positions(cls_positions, t, "cls_positions")),
        to_sep=_share(w, _checked_positions(sep_positions, t, "sep_positions")),
        to_self=diagonal.mean(-1),
        to_prev=prev,
        to_next=nxt,
        max_weight=w.max(-1).mean(-1),
    )


def _checked_positions(positions, t: int, name: str) -> list[int]:
    """Token positions 0..t-1 (a list or tuple of whole numbers), or an InputError naming them."""
    if not isinstance(positions, (list, tuple, np.ndarray)):
        raise InputError(f"{name} must be a list of token positions; got {positions!r}.")
    return [check_int(p, f"each of {name}", 0, t - 1) for p in positions]


def _share(w: np.ndarray, positions) -> np.ndarray:
    """Mean over rows of the weight a row puts on the given key positions."""
    positions = list(positions)
    if not positions:
        return np.zeros(w.shape[:2])
    return w[..., positions].sum(-1).mean(-1)


def _derived(result: AttentionResult, name: str, compute):
    """A value derived from an immutable result, kept on it after the first request."""
    value = result.__dict__.get(name)
    if value is None:
        value = compute()
        object.__setattr__(result, name, value)  # a cache of a derived value, not a new field
    return value


def filter_heads(stats: HeadStatistics, name: str) -> list[tuple[int, int]]:
    """(layer, head) of the heads that pass one of ``HEAD_FILTERS``.

    stats: a ``head_statistics`` result; name: a key of ``HEAD_FILTERS``."""
    if not isinstance(stats, HeadStatistics):
        raise InputError(f"filter_heads needs a head_statistics result; got {type(stats).__name__}.")
    if not isinstance(name, str) or name not in HEAD_FILTERS:
        raise InputError(f"Unknown filter {name!r}; choose one of: {', '.join(HEAD_FILTERS)}.")
    stat, at_least = HEAD_FILTERS[name]
    layers, heads = np.nonzero(getattr(stats, stat) >= at_least)
    return [(int(layer), int(head)) for layer, head in zip(layers, heads)]


# --- rollout ----------------------------------------------------------------------------


def attention_rollout(attention) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020), layer by layer: (layers, T, T), of an
    ``extract_attention`` result (computed once, kept on it, as the statistics) or of a
    (layers, heads, T, T) array.

    Each layer's weights are averaged over its heads, the residual connection is
    accounted for by adding the identity, rows are renormalised, and the layers are
    multiplied in order: rollout[l] = Â_l · … · Â_0. Row i of rollout[l] says how much
    each input token contributes to token i's representation after layer l.
    """
    if isinstance(attention, AttentionResult):
        return _derived(attention, "_rollout", lambda: _rollout(attention.weights))
    return _rollout(attention)


def _rollout(weights: np.ndarray) -> np.ndarray:
    w = check_array(weights, "The attention weights", np.float32)  # float64 would double a 500 MB array
    if w.ndim != 4 or w.shape[2] != w.shape[3]:
        raise InputError(f"Expected weights of shape (layers, heads, T, T); got {w.shape}.")
    t = w.shape[-1]
    out = np.empty((w.shape[0], t, t))
    current = np.eye(t)
    for layer in range(w.shape[0]):
        a = w[layer].mean(0) + np.eye(t)  # (T, T)
        a /= a.sum(-1, keepdims=True)
        current = a @ current
        out[layer] = current
    return out.astype(np.float32)
