"""The logit lens for encoders: every layer's hidden state at the mask read through the
model's own MLM head.

Reading layer ``r`` (0: the embeddings, the input of the first layer) runs the pass with
layers ``r`` onwards left out (each returns its input: ``hooks.skip_from``), so the model's
own code after its last layer applies to that state exactly as it applies to the last one:
ModernBERT's final LayerNorm, then the head's dense layer, activation, LayerNorm and the
decoder tied to the word embeddings (ALBERT's and ELECTRA's generator's dense layer maps
down to the embedding size first). The row for the last layer is the pass itself, which
is fill-mask's answer. One batch row per layer: one forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import check_int
from ..registry import catalogue
from .common import Guess, Request, Target, prepare, run_rows, target_for, top_guesses
from .hooks import Interventions, skip_from

MAX_LENS_TOP_K = 20

# What "reading an inner layer" means, per family (the last layer is read the same way).
_POST_LN = ("its output, already normalised by the layer's last LayerNorm as the last layer's is, through "
            "the MLM head: dense, GELU, LayerNorm, then the decoder tied to the word embeddings")
READING = {
    "bert": f"BERT: {_POST_LN}.",
    "roberta": f"RoBERTa: {_POST_LN}.",
    "distilbert": f"DistilBERT: {_POST_LN} (vocab_transform, vocab_layer_norm, vocab_projector).",
    "deberta-v2": f"DeBERTa: {_POST_LN}.",
    "electra": (f"ELECTRA (its generator, the network with an MLM head): {_POST_LN}; the head's dense "
                "layer maps the hidden size down to the embedding size first."),
    "albert": ("ALBERT: its one shared layer's output after that many passes, through the MLM head, "
               "whose dense layer projects the hidden size down to the embedding size, then GELU, "
               "LayerNorm and the decoder tied to the word embeddings."),
    "modernbert": ("ModernBERT: the residual stream after that layer (not normalised: ModernBERT is "
                   "pre-LayerNorm) through the final LayerNorm the model applies after its last layer, "
                   "then the head: dense, GELU, LayerNorm and the decoder tied to the word embeddings."),
}


@dataclass(frozen=True, eq=False)
class LensLayer:
    """One layer's hidden state at the first mask, through the MLM head."""

    layer: int  # 0: the embeddings; r: the output of the r-th layer (1-based)
    top: tuple[Guess, ...]
    p_target: float
    rank_target: int  # 1 = the head's top guess at this layer


@dataclass(frozen=True, eq=False)
class LogitLens:
    """``logit_lens``' result: the rows go from the embeddings (0) to the last layer."""

    model_key: str
    family: str
    text: str
    tokens: tuple[str, ...]
    position: int  # the first mask's token position
    target: Target  # the last layer's top guess
    reading: str  # what reading an inner layer means for this family
    layers: tuple[LensLayer, ...]
    num_layers: int

    @property
    def p_target(self) -> np.ndarray:
        return np.array([row.p_target for row in self.layers])

    @property
    def first_top_layer(self) -> int | None:
        """The first layer from which the final answer stays the top guess (None: never before the end)."""
        first = None
        for row in self.layers:
            if row.rank_target != 1:
                first = None
            elif first is None:
                first = row.layer
        return first


def logit_lens(model_key: str, text: str, top_k: int = 5) -> LogitLens:
    """At the first mask of ``text``, the embeddings and every layer's output read through the
    model's own MLM head: the top ``top_k`` per layer and p(final answer), where the final
    answer is the last layer's top guess (the last row is fill-mask's answer)."""
    spec = catalogue.get_spec(model_key)
    top_k = check_int(top_k, "top_k", 1, MAX_LENS_TOP_K)
    request = prepare(spec, text)
    n = request.num_layers

    def hooks_for(part):  # row r reads layer r: layers r, r+1, ... return their input
        hooks = Interventions(request.family, request.loaded.model)
        for layer in range(n):
            rows = [row for row, read in enumerate(part) if read <= layer]
            if rows:
                hooks.at("resid_post", layer, skip_from(rows))
        return hooks

    probs = run_rows(request, list(range(n + 1)), hooks_for)[:, 0].softmax(-1)  # (L + 1, V)
    target = target_for(request, None, int(probs[-1].argmax()))
    column = probs[:, target.token_id]
    ranks = (probs > column[:, None]).sum(-1) + 1
    rows = tuple(LensLayer(r, top_guesses(request, probs[r], top_k), float(column[r]), int(ranks[r]))
                 for r in range(n + 1))
    return LogitLens(spec.key, request.family, request.text, request.tokens, request.position, target,
                     reading_of(request), rows, n)


def reading_of(request: Request) -> str:
    return READING.get(request.family, f"{request.family}: each layer's output through the model's own MLM head.")
