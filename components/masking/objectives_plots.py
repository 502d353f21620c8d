"""HTML builders for the Masking lab's NSP / SOP / replaced-token views (no Gradio, no models)."""

from __future__ import annotations

from models import ReplacedTokens

from ..shell.common import escape


UNSURE = 0.05  # a pair-head probability within this of 0.5 gives no verdict


def pair_markdown(kind: str, p: float, heldout: float | None, majority: float | None = None,
                  reference: float | None = None, narrative: tuple[tuple[str, float], ...] = ()) -> str:
    """The answer of a sentence-pair head, with the head's held-out accuracy when known.

    ``majority``: the share of the held-out pairs' more frequent label (what always guessing
    it scores), from the training record; the baseline the accuracy is shown against.
    ``reference``: a bag-of-words order model's accuracy on the same pairs (how much order
    they show to a model comparing the segments' words), when the record has it.
    A head no better than ``majority`` on held-out pairs, or a probability within ``UNSURE``
    of 0.5, gives no verdict: the text says the head cannot tell.
    """
    question = "whether B follows A" if kind == "nsp" else "whether A, B are in their original order"
    head = f"**P(IsNext) = {p:.3f}**" if kind == "nsp" else f"**P(in order) = {p:.3f}**"
    if heldout is not None and majority is not None and heldout <= majority:
        text = (f"{head}: this head cannot tell {question}: on held-out pairs it is at chance (no better than "
                "always guessing the majority label), so this probability is no verdict.")
    elif abs(p - 0.5) < UNSURE:
        text = f"{head}: too close to 0.5 to call; the model cannot tell {question} here."
    elif kind == "nsp":
        verdict = "follows" if p >= 0.5 else "does not follow"
        text = f"{head}: the model thinks B {verdict} A."
    else:
        verdict = "in their original order" if p >= 0.5 else "swapped"
        text = f"{head}: the model thinks A, B are {verdict}."
    if heldout is not None:
        text += f"  \nThis head's accuracy on held-out pairs: {heldout:.1%}"
        text += (f" (always guessing the majority label: {majority:.1%})." if majority is not None else ".")
        if reference is not None:
            text += (f" A bag-of-words order model (which words each segment holds) gets {reference:.1%} of the "
                     "same pairs right: the order these pairs show.")
    return text + narrative_markdown(kind, dict(narrative))


def stage_markdown(key: str, stage: str, p: float, heldout: float | None = None, majority: float | None = None,
                   reference: float | None = None, narrative: tuple[tuple[str, float], ...] = ()) -> str:
    """The same pair read by ``stage``: ``key``'s NSP head trained on past the zoo's budget on pairs
    whose random B comes from elsewhere in the same source (``scripts.zoo nsp``)."""
    return (f"`{stage}`: {key}'s encoder and NSP head trained on past the zoo's budget on pairs whose random B "
            "comes from elsewhere in the same source (not one of the zoo's shared-budget runs).  \n"
            + pair_markdown("nsp", p, heldout, majority, reference, narrative))


def narrative_markdown(kind: str, found: dict[str, float]) -> str:
    """The head on held-out pairs of single sentences of running text (a student's pairs): for
    NSP with a random B of another source and of the same source, and what the gap says."""
    if kind == "nsp" and {"sentences, another-source", "sentences, same-source"} <= found.keys():
        other, same = found["sentences, another-source"], found["sentences, same-source"]
        text = ("  \nOn held-out pairs of single sentences from novels, stories, speeches and the Bible: "
                f"{other:.1%} right when the random B comes from another source (another kind of text, as "
                f"BERT drew them), {same:.1%} when it comes from elsewhere in the same source (the same kind "
                "of text).")
        if same < 0.6 <= other:
            text += (" So this head reads mostly what kind of text B is, not whether it goes on from A: "
                     "when the random B is of the same kind, it is near chance.")
        elif same >= 0.6:
            text += (" With a random B of the same kind of text it is still right in most pairs: it reads more "
                     "than what kind of text B is.")
        return text
    if kind == "sop" and "sentences, swapped" in found:
        return (f"  \nOn held-out pairs of neighbouring single sentences from novels, stories, speeches and the "
                f"Bible, half of them swapped: {found['sentences, swapped']:.1%} right.")
    return ""


def _shade(p: float) -> str:
    """White (0) to orange-red (1): a background light enough for dark text throughout."""
    g = int(245 - 120 * p)
    b = int(240 - 180 * p)
    return f"rgb(255,{g},{b})"


def replaced_note(result: ReplacedTokens, auc: float | None = None, swaps: tuple[tuple[str, float], ...] = (),
                  beside: str = "") -> str:
    """What the generator did, the discriminator's held-out ROC AUC when its record has one, and
    ``swaps``: the share of single-swap sentences whose wrong word it ranks first (the record's
    ``swap_detection``: "written" and "heldout"). ``beside``: the zoo model whose generator a
    detector trained past the shared budget was trained beside (``ModelSpec.generator``)."""
    parts = []
    if beside:
        parts.append(f"{escape(result.model_key)} is {escape(beside)}'s discriminator trained on past the zoo's "
                     f"shared budget for this view (its card says how); the swaps are {escape(beside)}'s "
                     f"generator's. Compare keeps {escape(beside)}.")
    drawn = len(result.swapped) + len(result.drawn_back)
    if drawn:
        text = f"The generator sampled at {drawn} position(s): {len(result.swapped)} replaced"
        if result.swapped:
            text += " (outlined, “swapped (was …)”)"
        if result.drawn_back:
            text += (f"; at {len(result.drawn_back)} it drew the original token back, which is no replacement "
                     "(ELECTRA labels such a position original: “drawn back: original”)")
        parts.append(text + ".")
    if auc is not None:
        parts.append(
            f"This discriminator's ROC AUC on held-out text corrupted by its generator: {auc:.3f} "
            "(the chance that a replaced token gets a higher P(replaced) than an original one; 0.5 = chance, "
            "1 = every replaced token above every original). The verdict cuts at P(replaced) = 0.5: a weak "
            "discriminator can rank a replacement above the originals and still stay under that cut, so "
            "compare the numbers."
        )
    found = dict(swaps)
    if {"written", "heldout"} <= found.keys():
        parts.append(f"With one plainly wrong word in a sentence, it ranks that word first in {found['written']:.0%} "
                     f"of the sentences written for the project and {found['heldout']:.0%} of held-out sentences "
                     "with a word swapped for another.")
    return f"<p class='rtd-note'>{' '.join(parts)}</p>" if parts else ""


def replaced_html(result: ReplacedTokens, auc: float | None = None, swaps: tuple[tuple[str, float], ...] = (),
                  beside: str = "") -> str:
    """Each token in a box shaded by P(replaced), with the number under it; swaps marked;
    the note of ``replaced_note`` above."""
    swapped = dict(zip(result.swapped, result.originals))
    cells = []
    for i, (tok, p, special) in enumerate(zip(result.tokens, result.p_replaced, result.special)):
        mark = ""
        if i in swapped:
            mark = f"<div class='rtd-was'>swapped (was {escape(swapped[i])})</div>"
        elif i in result.drawn_back:
            mark = "<div class='rtd-was'>drawn back: original</div>"
        style = "background:#eee;color:#555" if special else f"background:{_shade(p)};color:#111"
        cells.append(
            f"<span class='rtd-token' style='display:inline-block;margin:3px;padding:3px 6px;"
            f"border-radius:4px;{style};{'outline:2px solid #000;' if i in swapped else ''}'>"
            f"<span style='font-family:ui-monospace,monospace'>{escape(tok)}</span>"
            f"<div style='font-size:0.8em'>{'special' if special else f'{p:.2f}'}</div>{mark}</span>"
        )
    return (f"{replaced_note(result, auc, swaps, beside)}"
            f"<div class='rtd-view' role='group' aria-label='P(replaced) for every token'>{''.join(cells)}</div>")


def replaced_rows(result: ReplacedTokens) -> list[list]:
    """Table rows: position, token, P(replaced), verdict, what the generator replaced."""
    swapped = dict(zip(result.swapped, result.originals))
    return [
        [i, tok, round(p, 4), "special" if special else ("replaced" if p >= 0.5 else "original"),
         swapped.get(i, "")]
        for i, (tok, p, special) in enumerate(zip(result.tokens, result.p_replaced, result.special))
    ]
