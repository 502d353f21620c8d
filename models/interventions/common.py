"""What every intervention shares: the text encoded as fill-mask encodes it, the target at
the first mask, and batched forwards with edits (one batch row per variant of the pass).

The target is read at the text's first mask. A target word the vocabulary holds in one
piece is that piece; a word of several pieces is scored by its first piece (the piece a
word starts with after a space, e.g. "▁par" of "▁paris"), and the result says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from ..errors import InputError
from ..mlm.fill_mask import encode_masks, mask_spans
from ..mlm.masked_head import batch_masked_logits
from ..runtime.loading import LoadedModel, load_model, require_head
from ..validation import check_text
from ..inside.families import num_heads, num_layers
from .hooks import Interventions

TOP_K = 5
# Rows x tokens per forward: a batch of variants stays within a few MB of activations per layer.
MAX_BATCH_TOKENS = 4096


@dataclass(frozen=True)
class Guess:
    """One vocabulary entry at the first mask, with its probability (softmax over the vocabulary)."""

    token: str  # decoded, as fill-mask shows it
    token_id: int
    probability: float


@dataclass(frozen=True)
class Target:
    """The token whose probability an intervention follows."""

    token: str  # decoded
    token_id: int
    pieces: tuple[str, ...]  # the word's pieces; the first is scored ("" word: the top guess)
    note: str  # "", or how a word of several pieces is scored


@dataclass(frozen=True)
class Request:
    """A checked request: the model, the text's inputs (a batch of one) and its first mask."""

    loaded: LoadedModel
    family: str
    text: str  # as the model reads it (its own mask token)
    tokens: tuple[str, ...]
    inputs: dict  # CPU tensors (1, T): input_ids and what else the tokenizer gives the model
    position: int  # the first mask's token position
    mask_positions: tuple[int, ...]
    num_layers: int
    num_heads: int

    @property
    def length(self) -> int:
        return int(self.inputs["input_ids"].shape[1])


def prepare(spec, text, what: str = "text") -> Request:
    """The checks and the encoding every intervention starts with (no forward yet)."""
    require_head(spec, "mlm")
    text = check_text(text, what=what)
    spans = mask_spans(text)
    loaded = load_model(spec, head="mlm")
    encoded = encode_masks(loaded, text, spans)
    # a single text: an all-ones attention mask is no mask (as fill-mask's own forward)
    inputs = {k: v for k, v in encoded.inputs.items() if k != "attention_mask"}
    model = loaded.model
    return Request(loaded, model.config.model_type.replace("_", "-"), encoded.model_text,
                   tuple(loaded.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())),
                   inputs, encoded.positions[0], tuple(encoded.positions), num_layers(model), num_heads(model))


def target_for(request: Request, word, top_id: int | None = None) -> Target:
    """The target token: ``word``'s first piece, or the top guess ``top_id`` when no word is given."""
    tokenizer = request.loaded.tokenizer
    if word is None or (isinstance(word, str) and not word.strip()):
        if top_id is None:
            raise ValueError("top_id is needed when no target word is given")
        return Target(tokenizer.decode([top_id]), int(top_id), (), "")
    if not isinstance(word, str):
        raise InputError(f"target must be a word (or empty for the top guess), not {type(word).__name__}.")
    word = word.strip()[:100]
    vocab = tokenizer.get_vocab()
    if word in vocab:
        return Target(tokenizer.decode([vocab[word]]), int(vocab[word]), (word,), "")
    pieces = [p for p in tokenizer.tokenize(" " + word) if p not in ("▁", "Ġ")]
    if not pieces:
        raise InputError(f"target {word!r} gives no token for {request.loaded.spec.key}; choose another word.")
    first = int(tokenizer.convert_tokens_to_ids(pieces[0]))
    note = "" if len(pieces) == 1 else (
        f"{word!r} is {len(pieces)} pieces for {request.loaded.spec.key} ({' '.join(pieces)}); "
        f"it is scored by its first piece, {pieces[0]!r}.")
    return Target(tokenizer.decode([first]), first, tuple(pieces), note)


def run_rows(request: Request, specs: Sequence, hooks_for: Callable[[Sequence], Interventions],
             positions: Sequence[int] | None = None, inputs: dict | None = None) -> torch.Tensor:
    """(len(specs), P, V) float32 CPU logits at ``positions`` (default: the first mask): the
    text repeated once per spec, in batches, each batch run under ``hooks_for(its specs)``
    (whose edits index the batch's rows from 0)."""
    loaded = request.loaded
    inputs = request.inputs if inputs is None else inputs
    positions = [request.position] if positions is None else list(positions)
    chunk = max(1, MAX_BATCH_TOKENS // request.length)
    out = []
    for start in range(0, len(specs), chunk):
        part = specs[start:start + chunk]
        batch = {k: v.expand(len(part), -1).to(loaded.device) for k, v in inputs.items()}
        rows = [r for r in range(len(part)) for _ in positions]
        with hooks_for(part):
            logits = batch_masked_logits(loaded.model, batch, rows, positions * len(part))  # (n·P, V)
        out.append(logits.float().cpu().reshape(len(part), len(positions), -1))
    return torch.cat(out)


def no_edits(request: Request) -> Callable[[Sequence], Interventions]:
    return lambda part: Interventions(request.family, request.loaded.model)


def top_guesses(request: Request, probs: torch.Tensor, k: int = TOP_K) -> tuple[Guess, ...]:
    """The k most probable tokens of one (V,) probability row."""
    scores, ids = probs.topk(k)
    tokenizer = request.loaded.tokenizer
    return tuple(Guess(tokenizer.decode([int(i)]), int(i), float(s)) for s, i in zip(scores.tolist(), ids.tolist()))
