"""Fill-mask: the model's top-k guesses at each masked position.

Three steps, as in transformers' fill-mask pipeline: ``encode_masks`` (normalise the mask
spellings, tokenise, check), ``_forward`` (the model call: the only step that touches the
device), ``_decode`` (softmax over the whole vocabulary, top-k, token strings).

All masks of a text are predicted in one forward pass, each independently of the others
(as the pipeline does): the model does not see its own guess for mask 1 when guessing mask 2.
Requests that arrive while the model is busy share its next forward (``models.runtime.batching``):
a class typing at once costs a few forwards a second, not one per keystroke.
With ``causal=True`` the same model reads through a causal mask (``models.mlm.causal``): each
position sees only itself and the tokens to its left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import CapabilityError, InputError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.batching import MicroBatcher
from ..runtime.loading import LoadedModel, check_token_count, load_model, require_head
from ..runtime.cpu import cpu_vendor
from ..runtime.cuda_graphs import cuda_graphs_enabled, graphed_body
from ..runtime.onednn import onednn_linears
from ..runtime.packed import can_pack, packed_last_states_at
from .masked_head import FEW_ROWS, batch_masked_logits, masked_logits, project, transposed_few_rows
from ..validation import check_bool, check_int, check_text
from .causal import require_causal, with_causal_mask
from .results import FillMaskResult, MaskPrediction, Prediction

# Users may write either spelling, whatever the model's own mask token is.
MASK_PATTERN = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)


def with_own_mask(text: str, mask_token: str | None) -> str:
    """The text as a model reads it: each mask spelling ([MASK], <mask>, any case) as its own
    mask token (a tokenizer with none keeps the text)."""
    return MASK_PATTERN.sub(lambda _: mask_token, text) if mask_token else text


MAX_MASKS = 10
MAX_TOP_K = 50


@dataclass(frozen=True)
class _Encoded:
    inputs: dict  # tensors for the model, on the CPU
    positions: list[int]  # token positions of the masks, in text order
    spans: list[tuple[int, int]]  # character spans of the masks in the user's text
    model_text: str


def fill_mask(model_key: str | ModelSpec, text: str, top_k: int = 5, causal: bool = False) -> FillMaskResult:
    """One entry per mask, in text order, each with its top-k (token, score), best first.

    Scores are probabilities: the softmax over the whole vocabulary at that position.
    causal: add a causal attention mask (each position sees only itself and its left), a
    way this model was never trained to read; a ``CapabilityError`` for families that
    cannot take one.
    top_k: 1 to ``MAX_TOP_K`` (50); at most ``MAX_MASKS`` (10) masks, written [MASK] or <mask>.
    Raises ``EncoderLabError`` subclasses on bad input (unknown model, a model with no MLM
    head, empty text, no mask, too many masks, text too long, top_k out of range).
    """
    # the request's one look-up (or a caller's, who passes its spec): the spec travels down
    spec = model_key if isinstance(model_key, ModelSpec) else catalogue.get_spec(model_key)
    require_head(spec, "mlm")  # before any work on the text
    causal = check_bool(causal, "causal")
    if causal:
        require_causal(spec)
    top_k = check_int(top_k, "top_k", 1, MAX_TOP_K)
    text = check_text(text)
    spans = mask_spans(text)
    loaded = load_model(spec, head="mlm")
    encoded = encode_masks(loaded, text, spans)
    logits = _forward(loaded, encoded, causal)
    return _decode(loaded, text, encoded, logits, top_k, causal)


def mask_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the masks of a checked text; an ``InputError`` for none or too many."""
    spans = [m.span() for m in MASK_PATTERN.finditer(text)]
    if not spans:
        raise InputError(
            "Your text has no mask. Write [MASK] (or <mask>) where the model should guess "
            "a word, e.g. 'The capital of France is [MASK].'"
        )
    if len(spans) > MAX_MASKS:
        raise InputError(
            f"Your text has {len(spans)} masks; the limit is {MAX_MASKS}. Remove some."
        )
    return spans


def encode_masks(loaded: LoadedModel, text: str, spans: list[tuple[int, int]]) -> _Encoded:
    """The text as the model reads it (its own mask token), tokenised, with the masks' positions."""
    tokenizer = loaded.tokenizer
    mask_token = tokenizer.mask_token
    if mask_token is None or tokenizer.mask_token_id is None:
        raise CapabilityError(f"{loaded.spec.key}'s tokenizer has no mask token.")
    model_text = with_own_mask(text, mask_token)
    inputs = tokenizer(model_text, return_tensors="pt", truncation=False, verbose=False)
    ids = inputs["input_ids"][0]
    check_token_count(loaded, ids.shape[0])
    positions = torch.nonzero(ids == tokenizer.mask_token_id).flatten().tolist()
    if len(positions) != len(spans):
        raise InputError(
            f"Found {len(spans)} mask(s) in the text but {len(positions)} mask token(s) after "
            f"tokenisation by {loaded.spec.key}; write each mask as a separate [MASK]."
        )
    return _Encoded(dict(inputs), positions, spans, model_text)


def _forward(loaded: LoadedModel, encoded: _Encoded, causal: bool = False) -> torch.Tensor:
    """Logits at the mask positions: (masks, vocab), float32, on the CPU."""
    if not causal:  # shares a forward with concurrent requests for this model
        n_tokens = int(encoded.inputs["input_ids"].shape[1])
        return _BATCHER.submit(id(loaded.model), (loaded, encoded), cost=n_tokens)
    inputs = {k: v.to(loaded.device) for k, v in encoded.inputs.items()}
    inputs = with_causal_mask(loaded.model, inputs)
    return masked_logits(loaded.model, inputs, encoded.positions).float().cpu()


def mask_logits(loaded: LoadedModel, encoded: _Encoded) -> torch.Tensor:
    """(masks, vocab) float32 CPU logits at the masks of an ``encode_masks`` result: the forward
    fill-mask runs (shared with concurrent requests), for callers that need the whole distribution."""
    return _forward(loaded, encoded)


def _forward_batch(requests: list[tuple[LoadedModel, _Encoded]]) -> list[torch.Tensor]:
    """One forward for several texts of one model: (masks, vocab) float32 CPU logits per text.

    A BERT body on the CPU runs packed (``_packed_batch``: each text's real tokens only);
    any other model reads the texts padded on the right to the longest, with an attention
    mask, so each real token attends to its own text only and keeps its position ids. The
    MLM head then runs on every text's mask positions together.
    """
    loaded = requests[0][0]
    encoded = [enc for _, enc in requests]
    if packs(loaded):  # a BERT body on the CPU: its real tokens only, the head at the masks
        return _packed_batch(loaded, encoded)
    if uses_cuda_graphs(loaded):  # a BERT body on a GPU: a CUDA graph's replay, the head at the masks
        logits = _graphed_batch(loaded, encoded)
        if logits is not None:
            return logits
    return _padded_batch(loaded, encoded)


def _padded_batch(loaded: LoadedModel, encoded: list[_Encoded]) -> list[torch.Tensor]:
    """transformers' forward: one text as is, several padded on the right to the longest."""
    if len(encoded) == 1:  # one text, no padding: an all-ones attention mask is no mask
        inputs = {k: v.to(loaded.device) for k, v in encoded[0].inputs.items() if k != "attention_mask"}
        return [masked_logits(loaded.model, inputs, encoded[0].positions).float().cpu()]
    batch = {name: _pad_right(loaded, encoded, name).to(loaded.device)  # input_ids, attention_mask, ...
             for name in encoded[0].inputs.keys()}
    rows = [b for b, enc in enumerate(encoded) for _ in enc.positions]
    cols = [p for enc in encoded for p in enc.positions]
    logits = batch_masked_logits(loaded.model, batch, rows, cols).float().cpu()  # (P, V)
    return list(logits.split([len(enc.positions) for enc in encoded]))


def _pad_right(loaded: LoadedModel, encoded: list[_Encoded], name: str) -> torch.Tensor:
    """(B, T) the texts' ``name`` tensors padded on the right to the longest: the tokenizer's
    pad id for input_ids, 0 for anything else (attention mask, token types)."""
    fill = (loaded.tokenizer.pad_token_id or 0) if name == "input_ids" else 0
    width = max(int(enc.inputs[name].shape[1]) for enc in encoded)
    return torch.cat([torch.nn.functional.pad(enc.inputs[name], (0, width - enc.inputs[name].shape[1]), value=fill)
                      for enc in encoded])


# --- a BERT body on the CPU: the packed forward, the head at the masks ---------------------
# About a third of transformers' forward of a small body on a short text is not its
# products: the modules' calls, the attention mask's construction, the per-layer reshapes
# (on the 2-core Xeon of 2026-12-03, one run: minilm-mlm's body on 18 tokens 6.2 ms through
# transformers, 5.4 ms through ``packed_hidden_states``, its products about 4 ms of either).
# ``models.runtime.packed`` runs the same modules and weights on the real tokens alone (as
# ``embed`` does), with no mask to build when no token is padding; its last layer runs at
# the masked positions alone (``packed_last_states_at``: keys and values for every token,
# the rest at the masks; on the 2-core Xeon, one in-process alternation of 400 calls on an
# 18-token text, 8.79 -> 8.60 ms a call), and the MLM head then transforms and projects
# those rows only.

def packs(loaded: LoadedModel) -> bool:
    """Whether fill-mask runs ``loaded`` through the packed forward: transformers'
    ``BertForMaskedLM`` on the CPU, with no hook of another view on it (those views see
    transformers' own forward)."""
    return loaded.device.type == "cpu" and _bert_mlm(loaded.model)


def uses_cuda_graphs(loaded: LoadedModel) -> bool:
    """Whether fill-mask replays ``loaded``'s body as CUDA graphs (``models.runtime.cuda_graphs``):
    the same models as ``packs``, on a CUDA device, graphs on and never failed for this body."""
    return (loaded.device.type == "cuda" and cuda_graphs_enabled() and _bert_mlm(loaded.model)
            and not graphed_body(loaded.model.base_model).failed)


def _bert_mlm(model) -> bool:
    """transformers' ``BertForMaskedLM`` with BERT's head and body, no other view's hook on it."""
    head = getattr(model, "cls", None)
    return (type(model).__name__ == "BertForMaskedLM" and head is not None
            and type(getattr(head, "predictions", None)).__name__ == "BertLMPredictionHead"
            and can_pack(model.base_model)
            and not any(m._forward_hooks or m._forward_pre_hooks for m in (model, *head.modules())))


def forward_path(loaded: LoadedModel) -> str:
    """Which forward and which vocabulary-product layout fill-mask takes for ``loaded`` here,
    and why, in words (the benchmarks print it: both depend on the device and the CPU)."""
    if packs(loaded):
        body = "the packed BERT forward (real tokens only; models/runtime/packed.py), the last block at the masks only"
    elif uses_cuda_graphs(loaded):
        body = ("the body replayed as CUDA graphs, one per padded shape (models/runtime/cuda_graphs.py; "
                "transformers' forward where no graph serves)")
    else:
        body = f"transformers' forward ({type(loaded.model).__name__} on {loaded.device.type})"
    vendor = cpu_vendor() or "vendor unknown"
    if loaded.device.type != "cpu":
        layout = "nn.Linear's (not a CPU)"
    elif transposed_few_rows():
        layout = f"W @ x.T for 1-{FEW_ROWS} masks ({vendor}: MKL's x @ W.T is slow there with a few rows)"
    else:
        layout = f"nn.Linear's ({vendor}: W @ x.T is used on AMD CPUs only)"
    return f"fill-mask forward: {body}; the MLM head at the masks only; vocabulary product: {layout}"


def _packed_batch(loaded: LoadedModel, encoded: list[_Encoded]) -> list[torch.Tensor]:
    """(masks, vocab) float32 CPU logits per text, one packed forward for all of them."""
    if any(bool(enc.inputs["token_type_ids"].any()) for enc in encoded if "token_type_ids" in enc.inputs):
        return _padded_batch(loaded, encoded)  # a second segment: transformers' path
    model = loaded.model
    ids = _pad_right(loaded, encoded, "input_ids")  # (B, T)
    mask = _pad_right(loaded, encoded, "attention_mask")  # (B, T): the tokenizer's ones, then 0
    rows = torch.tensor([b for b, enc in enumerate(encoded) for _ in enc.positions])
    cols = torch.tensor([p for enc in encoded for p in enc.positions])
    body = model.base_model
    with torch.inference_mode(), onednn_linears(model):
        last = packed_last_states_at(body, ids, mask, rows, cols)  # (P, d): the masked positions' states
        kept = model.cls.predictions.transform(last)  # (P, d)
        logits = project(model.get_output_embeddings(), kept)  # (P, V)
    return list(logits.float().split([len(enc.positions) for enc in encoded]))


def _graphed_batch(loaded: LoadedModel, encoded: list[_Encoded]) -> list[torch.Tensor] | None:
    """(masks, vocab) float32 CPU logits per text: the body's CUDA graph for the padded shape,
    then the MLM head at the masks; None where no graph serves (transformers' forward then)."""
    model = loaded.model
    inputs = {name: _pad_right(loaded, encoded, name) for name in encoded[0].inputs.keys()}
    rows = torch.tensor([b for b, enc in enumerate(encoded) for _ in enc.positions])
    cols = torch.tensor([p for enc in encoded for p in enc.positions])
    states = graphed_body(model.base_model).states_at(inputs, rows, cols, loaded.tokenizer.pad_token_id or 0)
    if states is None:
        return None
    with torch.inference_mode():
        logits = project(model.get_output_embeddings(), model.cls.predictions.transform(states))  # (P, V)
    return list(logits.float().cpu().split([len(enc.positions) for enc in encoded]))


# Texts batched per forward are bounded by padded tokens (memory and the wait of the first)
# and by count. 8 texts, not 32: under a burst of 30 students each sending live requests back
# to back (bench/classroom.py --mode burst), a forward for the whole class holds every one of
# them until it ends, while the cores' other work (each answer's decoding and the server's)
# waits; forwards of 8 overlap with that work. 21 runs of the burst each, alternating, on the
# busy shared 2-core machine (not figures): p50 406 vs 503 ms, p95 593 vs 949 ms (16 texts:
# 409 / 701 ms, 4 texts: 527 / 782 ms). The next forward starts as soon as the previous one's
# logits are out: each caller decodes its own after ``submit`` returns.
_BATCHER = MicroBatcher(_forward_batch, max_cost=4096, max_items=8)


def _decode(
    loaded: LoadedModel, text: str, encoded: _Encoded, logits: torch.Tensor, top_k: int,
    causal: bool = False,
) -> FillMaskResult:
    tokenizer = loaded.tokenizer
    probs = logits.softmax(dim=-1)  # (M, V): over the whole vocabulary
    scores, ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)  # (M, k)
    masks = []
    for index, (position, row_scores, row_ids) in enumerate(
        zip(encoded.positions, scores.tolist(), ids.tolist())
    ):
        raw = tokenizer.convert_ids_to_tokens(row_ids)
        predictions = tuple(
            Prediction(token=tokenizer.decode([tid]), token_id=int(tid), score=float(s), raw_token=r)
            for tid, s, r in zip(row_ids, row_scores, raw)
        )
        masks.append(MaskPrediction(index=index, position=int(position), predictions=predictions))
    tokens = tuple(tokenizer.convert_ids_to_tokens(encoded.inputs["input_ids"][0].tolist()))
    return FillMaskResult(
        model_key=loaded.spec.key,
        text=encoded.model_text,
        tokens=tokens,
        masks=tuple(masks),
        filled_text=_fill_in(text, encoded.spans, [m.predictions[0] for m in masks],
                             [_starts_word(tokenizer, m.predictions[0].raw_token) for m in masks]),
        causal=causal,
    )


def _starts_word(tokenizer, raw_token: str) -> bool:
    """Whether the tokenizer's own decoding puts a space before this piece ("paris", "Ġcat",
    "▁cat": yes; "##ing", a bare BPE piece, punctuation: no)."""
    return tokenizer.convert_tokens_to_string(["a", raw_token]).startswith("a ")


def _fill_in(text: str, spans: list[tuple[int, int]], best: list[Prediction],
             starts_word: list[bool] | None = None) -> str:
    """The user's text with each mask replaced by its top prediction.

    A mask glued to the word before ("is[MASK]") is a token of its own for every tokenizer
    here (the same ids as "is [MASK]"), so a prediction that starts a word is set apart by a
    space ("is paris", as the fill-mask pipeline's sequence), not run into it ("isparis").
    """
    out, last = [], 0
    for k, ((start, end), pred) in enumerate(zip(spans, best)):
        word = pred.token.strip()
        before = text[last:start]
        if pred.raw_token.startswith("##"):  # a WordPiece continuation joins the word before
            word = word.removeprefix("##")
            before = before.rstrip(" ")
        elif starts_word and starts_word[k] and re.match(r"\w", word) and re.search(r"\w$", before or "".join(out)):
            before += " "
        out += [before, word]
        last = end
    out.append(text[last:])
    return "".join(out)


# --- click a word to mask it ------------------------------------------------------------

_WORD = re.compile(r"\[mask\]|<mask>|\w+(?:['’]\w+)*|[^\w\s]", re.IGNORECASE)


def text_segments(text: str) -> list[tuple[str, str | None]]:
    """The text cut into words, punctuation and the spaces between them.

    Each item is (segment, kind) with kind "word", "mask" or None (spaces): joined, the
    segments give back the text. The UI shows them as clickable words.
    """
    if not isinstance(text, str):
        raise InputError(f"The text must be a string, not {type(text).__name__}.")
    segments: list[tuple[str, str | None]] = []
    last = 0
    for m in _WORD.finditer(text):
        if m.start() > last:
            segments.append((text[last : m.start()], None))
        kind = "mask" if MASK_PATTERN.fullmatch(m.group()) else "word"
        segments.append((m.group(), kind))
        last = m.end()
    if last < len(text):
        segments.append((text[last:], None))
    return segments


def mask_word(text: str, segment_index: int, mask: str = "[MASK]") -> str:
    """The text with the word at ``segment_index`` (of ``text_segments``) replaced by a mask.

    Spaces, words that are already masks, and an index with no segment leave the text
    unchanged. segment_index: a whole number (True or 1.5 is an ``InputError``); mask: a string.
    """
    segments = text_segments(text)
    if isinstance(segment_index, float) and segment_index.is_integer():
        segment_index = int(segment_index)
    if isinstance(segment_index, bool) or not isinstance(segment_index, (int, np.integer)):
        raise InputError(f"segment_index must be a whole number (an index of text_segments(text)); "
                         f"got {segment_index!r}.")
    if not isinstance(mask, str):
        raise InputError(f"The mask must be a string such as [MASK]; got {type(mask).__name__}.")
    if not 0 <= segment_index < len(segments) or segments[segment_index][1] != "word":
        return text
    return "".join(
        mask if i == segment_index else seg for i, (seg, _) in enumerate(segments)
    )
