"""Sentence vectors and words in context: [CLS] vs mean vs max pooling, cosine similarity.

Three steps, as elsewhere in the core: ``encode_unpadded`` (tokenise every sentence once, no
padding, check lengths), ``forward_layers`` (the only step that touches the device: batches of
sentences sorted by length, so a batch holds sentences of (nearly) the same length and
little compute goes to padding), pooling (``pool_hidden``: the attention mask keeps padding out).

A sentence's vector does not depend on the batch it was computed in: mean and max pooling
read only real tokens, and the attention mask keeps padded keys out of every real token's
attention. Vectors agree with sentence-transformers' ``encode`` (mean pooling + normalise)
to ~1e-7 on the embedded all-MiniLM-L6-v2 for sentences of up to 256 tokens, its
``max_seq_length``; longer ones (up to 512) are read whole here and truncated there.

Layers are numbered like transformers' ``hidden_states``: 0 is the input embedding layer
(token + position + segment embeddings, layer-normed), 1..L the outputs of the L blocks;
negative indexes count from the end (-1 = the last layer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import CapabilityError, InputError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.batching import map_forwards
from ..runtime.loading import LoadedModel, check_token_count, load_model, max_input_tokens, refuse_decoder
from ..runtime.onednn import onednn_linears
from ..runtime.packed import can_pack, packed_hidden_states
from ..validation import check_bool, check_text

POOLINGS = ("cls", "mean", "max")
# what a decoder is refused here: pooling reads every token's state as an encoder gives it, both
# sides in view (a decoder's first token sees only itself)
POOLING = "pool sentence vectors"
MIN_SENTENCES = 2  # a similarity matrix needs two sentences
MAX_SENTENCES = 50  # what the matrix views stay readable with
MAX_EMBED_SENTENCES = 10_000  # ``embed`` alone (notebooks, benchmarks) takes more

# Batching: sentences sorted by token length are cut into batches that minimise
#   padded tokens x (1 + padded length / (6 x hidden)) + OVERHEAD x batches,
# i.e. the compute of the padded batches (the second term is attention's share, quadratic
# in length) plus a fixed cost per forward call, counted in tokens of compute.
# Measured on the 2-core CPU, quiet (ratio to sentence-transformers, short mix / long mix):
# 1024 gave 0.97x / 1.08x (bench/embeddings.py); a same-run sweep gave 256: 1.18x / 1.28x,
# 128: 1.23x / 1.32x, 64: 1.29x / 1.36x. Tight batches (little padding) win once both cores
# are free. (On a busy machine 1024 can win: with other work on the cores, fewer calls
# matter more.) With the linear layers on oneDNN (models/runtime/onednn.py)
# a same-run sweep, seconds for 256 sentences short / long: 16: 0.54 / 1.46, 64: 0.54 / 1.45,
# 256: 0.56 / 1.53, 1024: 0.70 / 1.93.
# Two batches run at once (``map_forwards``: two workers, one intra-op thread each on two
# cores) and a BERT body reads only real tokens (models/runtime/packed.py); the bench's figures
# are in BENCHMARKS.md. One alternating run each (5-11 rounds, seconds for the bench's 256
# sentences short / long): batches one after another 1.04 / 2.63, two at once 0.92 / 2.30
# (with workers of two threads each, which slow other torch work in the process, so the
# workers keep one); with two at once the per-call overhead hardly matters (16: 0.92 / 2.36,
# 64: 0.92 / 2.30, 256: 0.91 / 2.30; with one thread per worker, 8 and 24 are slower than 64:
# 1.22 / 2.74, 1.03 / 2.59 against 0.98 / 2.52). Packing alone: 3.2 % / 1.3 % less time.
OVERHEAD_TOKENS_CPU = 64
# Unmeasured guess: a GPU call's launch and transfer cost is assumed to be worth thousands
# of tokens of compute.
OVERHEAD_TOKENS_ACCELERATOR = 4096
MAX_BATCH_TOKENS = 8192  # padded tokens in one forward call (bounds memory)
MAX_BATCH_SENTENCES = 256


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


# --- results -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SimilarityResult:
    """The cosine matrix of N sentences' vectors (L2-normalised first)."""

    model_key: str
    sentences: tuple[str, ...]
    pooling: str  # "cls", "mean" or "max"
    layer: int  # the layer read, 0..L (negative indexes resolved)
    matrix: np.ndarray  # (N, N) float32, cosine in [-1, 1], read-only


@dataclass(frozen=True)
class WordInContextResult:
    """One word in N sentences: its vector at every layer, and how alike the occurrences are."""

    model_key: str
    word: str
    sentences: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]  # character span of the word in each sentence
    pieces: tuple[tuple[str, ...], ...]  # the word's tokens in each sentence (averaged)
    layers: tuple[int, ...]  # 0 (input embeddings) .. L
    vectors: np.ndarray  # (N, L + 1, d) float32, read-only
    cosine: np.ndarray  # (L + 1, N, N) float32: cosine between occurrences, layer by layer

    def mean_cosine(self) -> np.ndarray:
        """(L + 1,) the mean cosine over all pairs of occurrences, layer by layer."""
        n = len(self.sentences)
        upper = np.triu_indices(n, k=1)
        return self.cosine[:, upper[0], upper[1]].mean(axis=1)


# --- checks ------------------------------------------------------------------------------


def check_pooling(pooling) -> str:
    if pooling not in POOLINGS:
        raise InputError(f"Unknown pooling {pooling!r}; choose one of: {', '.join(POOLINGS)}.")
    return pooling


def check_poolings(poolings) -> tuple[str, ...]:
    """A list or tuple of one or more poolings, each checked (a lone string is not a list)."""
    if isinstance(poolings, str) or not isinstance(poolings, (list, tuple)) or not poolings:
        raise InputError(f"poolings must be a list of one or more of: {', '.join(POOLINGS)}; got {poolings!r}.")
    return tuple(check_pooling(p) for p in poolings)


def check_sentences(sentences, low: int = MIN_SENTENCES, high: int = MAX_SENTENCES) -> tuple[str, ...]:
    """A tuple of low..high non-empty sentences, or an InputError that says which is wrong."""
    if isinstance(sentences, str):
        raise InputError("Pass a list of sentences, not a single string (one sentence per item).")
    try:
        sentences = tuple(sentences)
    except TypeError:
        raise InputError(f"Pass a list of sentences, not {type(sentences).__name__}.") from None
    if len(sentences) < low:
        need = "two sentences to compare" if low == 2 else f"at least {low} sentence(s)"
        raise InputError(f"Got {len(sentences)} sentence(s); give {need}.")
    if len(sentences) > high:
        raise InputError(f"Got {len(sentences)} sentences; the limit is {high}. Remove some.")
    for i, sentence in enumerate(sentences, start=1):
        check_text(sentence, what=f"sentence {i}")
    return sentences


def layer_index(n_layers: int, layer, model_key: str = "the model") -> int:
    """A layer number as 0..n_layers (0 = input embeddings); negative counts from the end."""
    if isinstance(layer, float) and layer.is_integer():
        layer = int(layer)
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not -(n_layers + 1) <= layer <= n_layers:
        raise InputError(
            f"layer must be a whole number from {-(n_layers + 1)} to {n_layers} for {model_key}, which "
            f"has {n_layers} layers (0 = the input embeddings, {n_layers} or -1 = the last layer); "
            f"got {layer!r}."
        )
    return int(layer) % (n_layers + 1)


# --- encode, forward, pool --------------------------------------------------------------


def encode_unpadded(loaded: LoadedModel, sentences: Sequence[str], offsets: bool = False, truncate: bool = False):
    """Token ids of each sentence, unpadded (and offsets if asked); too long → InputError, or
    with ``truncate`` cut to the first tokens the model reads."""
    enc = loaded.tokenizer(
        list(sentences),
        truncation=bool(truncate),
        max_length=max_input_tokens(loaded) if truncate else None,
        return_attention_mask=False,
        return_token_type_ids=False,
        return_offsets_mapping=offsets,
        verbose=False,
    )
    for number, ids in enumerate(enc["input_ids"], start=1):
        check_token_count(loaded, len(ids), f"Sentence {number}")
    return enc


def plan_batches(lengths: Sequence[int], hidden_size: int, overhead_tokens: int,
                 max_tokens: int = MAX_BATCH_TOKENS) -> list[np.ndarray]:
    """Indexes of the sentences in each batch: sorted by length, cut at the cheapest places.

    An exact dynamic programme over the sorted lengths: batch [i, j) costs
    (j - i) * L * (1 + L / (6 * hidden)) + overhead, L the longest of the batch.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(lengths, kind="stable")
    sorted_len = lengths[order].astype(np.float64)
    n = len(order)
    best = np.zeros(n + 1)
    cut = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):
        longest = sorted_len[j - 1]
        width = min(j, MAX_BATCH_SENTENCES, max(1, int(max_tokens // longest)))
        starts = np.arange(j - width, j)
        cost = best[starts] + (j - starts) * longest * (1 + longest / (6 * hidden_size)) + overhead_tokens
        k = int(np.argmin(cost))
        best[j], cut[j] = cost[k], starts[k]
    batches, j = [], n
    while j > 0:
        batches.append(order[cut[j]:j])
        j = cut[j]
    return batches[::-1]


def forward_layers(loaded: LoadedModel, ids: list[list[int]], layers: Sequence[int],
                   finish: Callable | None = None) -> Iterator[tuple]:
    """For each batch: (sentence indexes, [hidden states (B, T, d) per asked layer], mask (B, T)).

    The only step that touches the device. Runs under ``inference_mode``; the states stay
    on the device, in the model's dtype. On a CPU two batches run at once, on two threads
    (``map_forwards``); the batches come costliest first. ``finish(states, mask)``, when
    given, runs on the forward's own thread and its result replaces the states: work on
    the states (pooling) then runs beside the other forward with that thread's share of
    the cores, not on the caller's thread with a share of its own.
    """
    model, device = loaded.model, loaded.device
    n_layers = int(model.config.num_hidden_layers)
    want_all = any(layer != n_layers for layer in layers)
    pad_id = loaded.tokenizer.pad_token_id or 0
    lengths = [len(x) for x in ids]
    overhead = OVERHEAD_TOKENS_CPU if device.type == "cpu" else OVERHEAD_TOKENS_ACCELERATOR
    packed = device.type == "cpu" and can_pack(model)  # padding costs CPU time; a GPU pads as transformers does

    def run(batch):
        width = max(lengths[i] for i in batch)
        input_ids = np.full((len(batch), width), pad_id, dtype=np.int64)  # (B, T)
        mask = np.zeros((len(batch), width), dtype=np.int64)  # (B, T)
        for row, i in enumerate(batch):
            input_ids[row, : lengths[i]] = ids[i]
            mask[row, : lengths[i]] = 1
        mask_t = torch.from_numpy(mask).to(device)
        ids_t = torch.from_numpy(input_ids).to(device)
        with torch.inference_mode(), onednn_linears(model):
            if packed:  # the same layers on the real tokens only (models.runtime.packed)
                states = packed_hidden_states(model, ids_t, mask_t, layers)
            else:
                out = model(input_ids=ids_t, attention_mask=mask_t, output_hidden_states=want_all)
                # The last layer is the model's own final output (hidden_states[L] for BERT).
                states = [out.last_hidden_state if layer == n_layers else out.hidden_states[layer]
                          for layer in layers]
            return batch, (states if finish is None else finish(states, mask_t)), mask_t

    plan = plan_batches(lengths, int(model.config.hidden_size), overhead)
    # the costliest first, so that the last batch to finish is a small one (two run at once on a CPU)
    plan.sort(key=lambda b: -len(b) * max(lengths[i] for i in b))
    yield from map_forwards(run, plan, device)


def pool_hidden(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """(B, T, d) states and (B, T) mask → (B, d) float32; padding never leaks in."""
    hidden = hidden.float()  # no copy on the CPU (already float32)
    if pooling == "cls":
        return hidden[:, 0]  # (B, d): the first token, [CLS] / <s>
    keep = mask.unsqueeze(-1).bool()  # (B, T, 1)
    if pooling == "max":
        return hidden.masked_fill(~keep, float("-inf")).amax(dim=1)  # (B, d)
    weights = keep.to(hidden.dtype)  # (B, T, 1)
    # As sentence-transformers' Pooling: masked sum / clamped count.
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)  # (B, d)


def _pooled(loaded: LoadedModel, sentences: Sequence[str], poolings: Sequence[str], layer: int,
            normalize: bool, truncate: bool = False) -> dict[str, np.ndarray]:
    """{pooling: (N, d) float32} from one forward pass over the sentences."""
    ids = encode_unpadded(loaded, sentences, truncate=truncate)["input_ids"]
    d = int(loaded.model.config.hidden_size)
    out = {p: torch.empty(len(ids), d, dtype=torch.float32) for p in poolings}  # (N, d) each

    def pool(states, mask):  # on the forward's thread
        vectors = {p: pool_hidden(states[0], mask, p) for p in poolings}  # (B, d) each
        return {p: (F.normalize(v, p=2, dim=1) if normalize else v).cpu() for p, v in vectors.items()}

    for batch, vectors, _mask in forward_layers(loaded, ids, [layer], finish=pool):
        index = torch.from_numpy(batch)
        for p in poolings:
            out[p][index] = vectors[p]
    return {p: v.numpy() for p, v in out.items()}


def pooled_vectors(spec: ModelSpec, sentences, poolings: Sequence[str], truncate: bool = False) -> dict[str, np.ndarray]:
    """{pooling: (N, d) float32 unnormalised vectors} of the last layer, every pooling from one
    forward pass (``embed`` with normalize=False, once per pooling, gives the same vectors)."""
    refuse_decoder(spec, POOLING)
    poolings = check_poolings(poolings)
    sentences = check_sentences(sentences, low=1, high=MAX_EMBED_SENTENCES)
    loaded = load_model(spec, head="base")
    return _pooled(loaded, sentences, poolings, _layer_of(loaded, -1), False, bool(truncate))


def check_layer(model_key: str, layer) -> int:
    """The layer as 0..L for this model (loaded, cached), or an InputError that gives the range."""
    spec = catalogue.get_spec(model_key)
    refuse_decoder(spec, POOLING)
    return _layer_of(load_model(spec, head="base"), layer)


def _layer_of(loaded: LoadedModel, layer) -> int:
    return layer_index(int(loaded.model.config.num_hidden_layers), layer, loaded.spec.key)


# --- public API --------------------------------------------------------------------------


def embed(model_key: str, sentences, pooling: str = "mean", layer: int = -1,
          normalize: bool = True, truncate: bool = False) -> np.ndarray:
    """(N, d) float32 sentence vectors.

    pooling: "cls" (the first token's state), "mean" (average over the real tokens) or
    "max" (per dimension, the largest over the real tokens). layer: 0 = the input
    embeddings, 1..L the blocks, negative from the end. normalize: L2-normalise each vector
    (what cosine similarity needs). With ``minilm-l6``, "mean" and normalize=True give
    sentence-transformers' all-MiniLM-L6-v2 embeddings for sentences of up to 256 tokens
    (its ``max_seq_length``). Longer sentences (up to the model's 512) are read whole here,
    so their vectors differ from sentence-transformers', which reads the first 256 tokens.
    A sentence longer than the model reads is an ``InputError``; with ``truncate`` (a corpus
    nobody can shorten) it is cut to the tokens the model reads, as sentence-transformers does.
    """
    spec = catalogue.get_spec(model_key)
    refuse_decoder(spec, POOLING)
    check_pooling(pooling)
    normalize, truncate = check_bool(normalize, "normalize"), check_bool(truncate, "truncate")
    sentences = check_sentences(sentences, low=1, high=MAX_EMBED_SENTENCES)
    loaded = load_model(spec, head="base")
    layer = _layer_of(loaded, layer)
    return _pooled(loaded, sentences, [pooling], layer, normalize, truncate)[pooling]


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """(N, N) cosine similarity of N vectors: L2-normalised, then dot products."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    return np.clip(unit @ np.swapaxes(unit, -1, -2), -1.0, 1.0)


def compare_poolings(model_key: str, sentences, layer: int = -1,
                     poolings: Sequence[str] = ("cls", "mean")) -> tuple[SimilarityResult, ...]:
    """The cosine matrix of each pooling, from one forward pass (what the tab shows)."""
    spec = catalogue.get_spec(model_key)
    refuse_decoder(spec, POOLING)
    poolings = check_poolings(poolings)
    sentences = check_sentences(sentences)
    loaded = load_model(spec, head="base")
    layer = _layer_of(loaded, layer)
    vectors = _pooled(loaded, sentences, poolings, layer, normalize=False)  # cosine_matrix normalises
    return tuple(
        SimilarityResult(model_key, sentences, p, layer, _frozen(cosine_matrix(vectors[p])))
        for p in poolings
    )


def similarity(model_key: str, sentences, pooling: str = "mean", layer: int = -1) -> SimilarityResult:
    """The (N, N) cosine matrix of 2..50 sentences' vectors (L2-normalised first)."""
    return compare_poolings(model_key, sentences, layer, (pooling,))[0]


def _word_spans(sentences: Sequence[str], word: str) -> list[tuple[int, int]]:
    pattern = re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)", re.IGNORECASE)
    found = [pattern.search(s) for s in sentences]
    missing = [i for i, m in enumerate(found, start=1) if m is None]
    if missing:
        snippet = sentences[missing[0] - 1]
        snippet = snippet if len(snippet) <= 60 else snippet[:57] + "..."
        which = ", ".join(map(str, missing))
        raise InputError(
            f"The word {word!r} is not in sentence {which} (e.g. {snippet!r}) as a whole word: "
            "every sentence must contain it."
        )
    return [m.span() for m in found]


def word_in_context(model_key: str, sentences, word: str) -> WordInContextResult:
    """The word's vector at every layer in each sentence, and the cosine between occurrences.

    The first whole-word, case-insensitive occurrence in each sentence is used; a word cut
    into several pieces is the mean of its pieces. Layer 0 is the input embeddings, where the
    same word is (nearly) the same vector whatever its context.
    """
    return word_occurrences(catalogue.get_spec(model_key), sentences, word)


def word_occurrences(spec: ModelSpec, sentences, word: str) -> WordInContextResult:
    """``word_in_context`` on a resolved spec."""
    refuse_decoder(spec, POOLING)
    sentences = check_sentences(sentences)
    word = check_text(word, what="word", empty="type the word to trace, one that occurs in every sentence").strip()
    spans = _word_spans(sentences, word)
    loaded = load_model(spec, head="base")
    enc = encode_unpadded(loaded, sentences, offsets=True)
    ids = enc["input_ids"]
    positions = []
    for k, ((start, end), offsets) in enumerate(zip(spans, enc["offset_mapping"]), start=1):
        hit = [t for t, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
        if not hit:
            raise CapabilityError(f"{spec.key}'s tokenizer keeps no token of {word!r} in sentence {k}.")
        positions.append(hit)
    n_layers = int(loaded.model.config.num_hidden_layers)
    layers = list(range(n_layers + 1))
    vectors = np.empty((len(ids), n_layers + 1, int(loaded.model.config.hidden_size)), dtype=np.float32)
    for batch, states, _mask in forward_layers(loaded, ids, layers):
        counts = np.array([len(positions[i]) for i in batch])  # (B,) pieces per sentence
        rows = torch.from_numpy(np.repeat(np.arange(len(batch)), counts)).to(loaded.device)  # (P,)
        cols = torch.tensor([t for i in batch for t in positions[i]], device=loaded.device)  # (P,)
        # Only the word's pieces, every layer, in one device-to-CPU transfer per batch.
        picked = torch.stack([s[rows, cols] for s in states]).float().cpu().numpy()  # (L + 1, P, d)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])  # (B,) each sentence's first piece
        sums = np.add.reduceat(picked, starts, axis=1)  # (L + 1, B, d)
        vectors[batch] = np.swapaxes(sums / counts[:, None], 0, 1)  # (B, L + 1, d)
    cosine = cosine_matrix(np.swapaxes(vectors, 0, 1))  # (L + 1, N, N)
    tokens = [loaded.tokenizer.convert_ids_to_tokens([ids[i][t] for t in p]) for i, p in enumerate(positions)]
    return WordInContextResult(
        model_key=spec.key,
        word=word,
        sentences=sentences,
        spans=tuple(spans),
        pieces=tuple(tuple(t) for t in tokens),
        layers=tuple(layers),
        vectors=_frozen(vectors),
        cosine=_frozen(cosine),
    )
