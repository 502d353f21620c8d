"""The Lessons tab's own small builders: the lines under each step's view and the pair
table. Plain data in, text or a DataFrame out: no Gradio, no model calls (the charts come
from the tabs' own ``*_plots`` modules)."""

from __future__ import annotations

import pandas as pd

from ..shell.common import escape, quoted


def encoder_decoder_note(model_key: str, twin: str, top_guess: str, continued: str) -> str:
    note = f"The detective, `{model_key}`, reading both sides: its first guess is {quoted(top_guess)}."
    if twin and continued:
        note += (f" The storyteller, `{twin}`, reading the words before the blank, continues them: "
                 f"{quoted(continued)} (eight pieces, each drawn from its top 5, seed 0).")
    return note + (" The last chart, a second exhibit: the encoder made to read the left only through a causal "
                   "mask it never trained with (a handicapped encoder, not a storyteller).")


def attention_note(model_key: str, tokens: int, layers: int, heads: int, layer: int, head: int) -> str:
    return (f"`{model_key}`: {tokens} tokens, {layers} layers × {heads} heads; showing layer {layer}, "
            f"head {head} (counted from 0).")


def masking_note(eligible: int, selected_per_epoch: list[int]) -> str:
    counts = ", ".join(map(str, selected_per_epoch))
    return (f"{eligible} tokens can be selected (special tokens never are); selected in each of the "
            f"{len(selected_per_epoch)} epochs (a fresh draw each time): {counts}.")


def variants_note(entries) -> str:
    """What the zoo's runs share (the training tokens) and what they do not (size, FLOPs per token)."""
    tokens = [e.tokens for e in entries]
    per_token = {e.key: e.flops / e.tokens for e in entries}
    params = [e.parameters for e in entries]
    cheapest, dearest = min(per_token, key=per_token.get), max(per_token, key=per_token.get)
    return (f"{len(entries)} families trained here on {min(tokens) / 1e6:.1f} M training tokens each; "
            f"not the same size or cost: {min(params) / 1e6:.2f}–{max(params) / 1e6:.2f} M parameters, "
            f"{per_token[cheapest] / 1e6:.1f} M (`{cheapest}`) to {per_token[dearest] / 1e6:.1f} M "
            f"(`{dearest}`) training FLOPs per token. The table says how long and on what. Below: each "
            "model's top 3 for your sentence.")


def loss_note(model_key: str, loss: float, positions: int, arithmetic_text: str) -> str:
    return (f"**Loss = {loss:.4f} nats**: the mean of −log p over the {positions} selected position(s) "
            f"(`{model_key}`).  \n" + arithmetic_text)


def pair_frame(rows, column: str) -> pd.DataFrame:
    """rows: (which pair, first sentence, second sentence, probability)."""
    return pd.DataFrame([{"pair": name, "first": a, "second": b, column: round(p, 4)} for name, a, b, p in rows])


def search_note(model_key: str, hits: int, corpus_size: int, pooling: str) -> str:
    return (f"`{model_key}`, last layer. Search: the {hits} closest of {corpus_size:,} corpus lines (the "
            f"held-out split and the knowledge sources), {pooling} pooling, exact FAISS index.")


def sentence_encoder_note(result, scores) -> str:
    """The held-out gain, and your groups' ROC AUC before and after (``scores``: (before, after) or None)."""
    note = (f"**Held-out ROC AUC {result.before.auc:.3f} → {result.after.auc:.3f} ({result.auc_gain:+.3f})** on "
            f"{result.heldout_groups} WordNet senses of words never trained on; {result.steps_done} steps of "
            f"{result.batch_size} {'triplets' if result.loss == 'triplet' else 'pairs'}, {result.training_seconds:.0f} s of training.  \n")
    if scores is None:
        note += "Your sentences: no score (write two groups or more, one with two sentences or more).  \n"
    else:
        before, after = scores
        note += (f"Your groups: ROC AUC {before.auc:.3f} with `{result.model_key}` → {after.auc:.3f} with its trained "
                 f"copy `{escape(result.encoder_key)}` (usable in the Embeddings tab and in search while the "
                 "server runs).  \n")
    return note + f"*{escape(result.note)}*"
