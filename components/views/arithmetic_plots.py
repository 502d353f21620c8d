"""Tables and text of the "show the arithmetic" views: core results in, DataFrame / Markdown out.

No Gradio and no model calls. Words are model tokens or user text: escaped for Markdown.
"""

from __future__ import annotations

import pandas as pd

from models import LossArithmetic, NSPLoss

from ..shell.common import quoted


def probability(p: float) -> str:
    """A probability in the text: four decimals, or four significant digits below 0.001 (where
    four decimals would read 0.0000 and the loss beside it would not follow from it)."""
    return f"{p:.4f}" if p >= 1e-3 else f"{p:.4g}"


def arithmetic_frame(result: LossArithmetic) -> pd.DataFrame:
    """One row per word shown, the rest of the vocabulary folded into one, then the sum."""
    rows = [
        {"word": r.word + (" ← target" if r.word == result.target else ""), "logit z": round(r.logit, 4),
         "exp(z)": f"{r.exp:.6g}", "p = exp(z) / Σ": round(r.p, 6)}
        for r in result.rows
    ]
    others = result.vocabulary_size - len(result.rows)
    if others > 0:
        rows.append({"word": f"… the other {others:,} words", "logit z": None, "exp(z)": f"{result.rest:.6g}",
                     "p = exp(z) / Σ": round(result.rest / result.denominator, 6)})
    rows.append({"word": f"Σ over all {result.vocabulary_size:,} words (the denominator)", "logit z": None,
                 "exp(z)": f"{result.denominator:.6g}", "p = exp(z) / Σ": 1.0})
    return pd.DataFrame(rows, columns=["word", "logit z", "exp(z)", "p = exp(z) / Σ"])


def arithmetic_text(result: LossArithmetic) -> str:
    """The computation in one line of Markdown, with the numbers of the table."""
    target = next(r for r in result.rows if r.word == result.target)
    where = ""
    if result.position is not None:
        where = f"Position {result.position}: the model saw {quoted(result.shown)} where {quoted(result.target)} was.  \n"
    p = probability(result.p_target)
    return (
        where
        + f"p({quoted(result.target)}) = exp({target.logit:.4g}) / Σ = {target.exp:.6g} / {result.denominator:.6g} "
        f"= **{p}**; loss = −ln {p} = **{result.loss:.4f} nats**."
    )


# A pair head's two classes, class 0 first: what its P(...) and its labels are called.
PAIR_CLASSES = {"nsp": ("IsNext", "NotNext"), "sop": ("in order", "swapped")}


def nsp_loss_text(result: NSPLoss) -> str:
    """P(class 0) of the pair head (NSP's IsNext, SOP's in order), the label, the binary
    cross-entropy, and the check of the pooler path."""
    yes, no = PAIR_CLASSES[result.head]
    label = yes if result.is_next else no
    term = f"−ln P({yes})" if result.is_next else f"−ln (1 − P({yes}))"
    q = result.p_is_next if result.is_next else 1 - result.p_is_next
    return (
        f"{result.head.upper()} logits from [CLS] → pooler (dense + tanh) → classifier: {yes} "
        f"{result.logits[0]:.4f}, {no} {result.logits[1]:.4f}; softmax: **P({yes}) = "
        f"{probability(result.p_is_next)}**.  \n"
        f"True label **{label}**: loss = {term} = −ln {probability(q)} = **{result.loss:.4f} nats**.  \n"
        f"Recomputed by hand from the [CLS] vector through the pooler: the same logits to within "
        f"{result.pooler_check:.1e}."
    )
