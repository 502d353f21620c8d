"""Tables, HTML and Plotly builders for the Compare tab: core results in, views out.

No Gradio and no model calls here. Every token, word and reason that reaches HTML or a
figure is escaped first (``escape``): a token such as ``<s>`` must stay text.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from models import (
    ArchitectureFacts,
    BenchmarkResult,
    CompareFillMaskResult,
    CompareTokensResult,
    SkippedModel,
    TrainingRecipe,
    ZooEntry,
)


from ..shell.common import count, escape, show_token

ARCHITECTURE_COLUMNS = {
    "model_key": "model",
    "family": "family",
    "params_total": "params (encoder)",
    "params_embedding": "embedding",
    "params_encoder": "layers & norms",
    "params_pooler": "pooler",
    "params_mlm_head": "MLM head",
    "mlm_head_released": "MLM head released",
    "layers": "layers",
    "weight_sets": "layer weight sets",
    "hidden": "hidden",
    "heads": "heads",
    "ffn": "FFN",
    "embedding_size": "embedding width",
    "vocab_size": "vocab",
    "tokenizer_kind": "tokenizer",
    "max_context": "max context",
    "position_scheme": "positions",
    "activation": "activation",
    "attention_pattern": "attention",
    "tokenizer_kind_from": "tokenizer kind from",
    "config_source": "config",
}


def architecture_frame(facts: tuple[ArchitectureFacts, ...]) -> pd.DataFrame:
    """One row per model, the columns of ``ARCHITECTURE_COLUMNS`` (parameter counts with
    thousands separators)."""
    rows = [{label: count(getattr(f, name)) if name.startswith("params_") else getattr(f, name)
             for name, label in ARCHITECTURE_COLUMNS.items()} for f in facts]
    frame = pd.DataFrame(rows, columns=list(ARCHITECTURE_COLUMNS.values()))
    frame["MLM head released"] = frame["MLM head released"].map({True: "yes", False: "no"})
    return frame


NOT_TRANSCRIBED = "not transcribed"  # null in data/training_recipes.json


def recipes_frame(recipes: tuple[TrainingRecipe, ...]) -> pd.DataFrame:
    """The papers' pre-training recipes; a figure not transcribed (null) shows as such."""

    def shown(value: str | None) -> str:
        return value or NOT_TRANSCRIBED

    rows = [
        {
            "model": r.model,
            "registry keys": ", ".join(r.applies_to),
            "data": f"{r.data} ({r.data_size})" if r.data_size else r.data,
            "objective": r.objective,
            "NSP": r.nsp,
            "masking": shown(r.masking),
            "masking rate": shown(r.masking_rate),
            "distillation": r.distillation,
            "batch size": shown(r.batch_size),
            "steps": shown(r.steps),
            "sequence length": shown(r.sequence_length),
            "notes": r.notes,
            "paper": r.citation,
        }
        for r in recipes
    ]
    return pd.DataFrame(rows)


def fill_mask_frame(result: CompareFillMaskResult) -> pd.DataFrame:
    """One row per (mask, rank); one column per model: "token (probability)"."""
    rows = []
    for index in range(len(result.agreement)):
        depth = max(len(r.masks[index].predictions) for r in result.results)
        for rank in range(depth):
            row = {"mask": index + 1, "rank": rank + 1}
            for r in result.results:
                preds = r.masks[index].predictions
                row[r.model_key] = f"{show_token(preds[rank].token)} ({preds[rank].score:.1%})" if rank < len(preds) else ""
            rows.append(row)
    return pd.DataFrame(rows, columns=["mask", "rank", *(r.model_key for r in result.results)])


def _words(words) -> str:
    return ", ".join(f"<b>{escape(w)}</b>" for w in words) if words else "<i>none</i>"


def agreement_html(result: CompareFillMaskResult) -> str:
    """Per mask: the words every model has in its top-k, and how many models list each word."""
    n = len(result.results)
    items = []
    for a in result.agreement:
        votes = ", ".join(f"{escape(w)} ×{c}" for w, c in a.votes if c > 1) or "no word in two lists"
        items.append(
            f"<li>Mask {a.index + 1}: in all {n} top-k lists: {_words(a.shared)}; "
            f"first guesses {'agree' if a.top1_agree else 'differ'}; "
            f"listed by several models: {votes}.</li>"
        )
    texts = "".join(
        f"<li><code>{escape(key)}</code> read: {escape(text)}</li>" for key, text in result.model_texts
    )
    return (
        f"<div class='compare-agreement'><p>Agreement across {n} model(s) "
        "(words compared without ##, Ġ or ▁ markers, lower-cased):</p>"
        f"<ul>{''.join(items)}</ul><p>Each model's own mask token:</p><ul>{texts}</ul></div>"
    )


def skipped_html(skipped: tuple[SkippedModel, ...]) -> str:
    """The models left out of a comparison, each with why."""
    if not skipped:
        return ""
    items = "".join(f"<li><b>{escape(s.model_key)}</b>: {escape(s.reason)}</li>" for s in skipped)
    return f"<div class='compare-skipped'><p>Not compared:</p><ul>{items}</ul></div>"


# dark text of its own: on the dark theme the page's text colour is light, and the chips stay light
_PIECE = ("display:inline-block;margin:2px;padding:1px 6px;border-radius:4px;font-family:ui-monospace,monospace;"
          "color:#111;")
_WORD_START = _PIECE + "background:#dbe9f6;"
_CONTINUES = _PIECE + "background:#fde2c8;"


def tokens_html(result: CompareTokensResult) -> str:
    """Each model's pieces as chips; pieces that continue a word in orange."""
    rows = []
    for m in result.models:
        chips = "".join(
            f"<span class='piece' style='{_CONTINUES if m.continues[i] else _WORD_START}'>"
            f"{escape(show_token(p))}</span>"
            for i, p in enumerate(m.pieces)
        )
        rows.append(
            f"<div class='compare-tokens-row'>"
            f"<p><b>{escape(m.model_key)}</b> ({escape(m.tokenizer_kind)}): "
            f"{m.piece_count} pieces, {m.continuation_count} continue a word</p>{chips}</div>"
        )
    return "".join(rows)


TOKENS_COLUMNS = ["model", "tokenizer", "pieces", "continue a word", "with special tokens", "pieces (space separated)"]
# Fixed widths: left to the content, the pieces' long text squeezed the count columns until
# their headers broke letter by letter.
TOKENS_COLUMN_WIDTHS = ["13%", "15%", "7%", "9%", "9%", "47%"]


def tokens_frame(result: CompareTokensResult) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "model": m.model_key,
                "tokenizer": m.tokenizer_kind,
                "pieces": m.piece_count,
                "continue a word": m.continuation_count,
                "with special tokens": len(m.tokens),
                "pieces (space separated)": " ".join(m.pieces),
            }
            for m in result.models
        ],
        columns=TOKENS_COLUMNS,
    )


def benchmark_frame(results: list[BenchmarkResult]) -> pd.DataFrame:
    """One row per (model, length): median and best time, throughput, peak memory."""
    rows = [
        {
            "model": r.model_key,
            "weights": r.weights,
            "device": f"{r.device} ({r.dtype}, {r.attention})",
            "length": p.length,
            "batch": p.batch_size,
            "median ms": round(p.median_ms, 2),
            "best ms": round(p.min_ms, 2),
            "runs": p.runs,
            "tokens/s": count(round(p.tokens_per_s)),
            "peak MiB": p.peak_memory_mb,
        }
        for r in results
        for p in r.points
    ]
    return pd.DataFrame(
        rows,
        columns=["model", "weights", "device", "length", "batch", "median ms", "best ms", "runs", "tokens/s", "peak MiB"],
    )


def benchmark_figure(results: list[BenchmarkResult]) -> go.Figure:
    """Median forward time vs sequence length, one line per model; random-init lines dashed."""
    fig = go.Figure()
    for r in results:
        fig.add_trace(
            go.Scatter(
                x=[p.length for p in r.points],
                y=[p.median_ms for p in r.points],
                mode="lines+markers",
                name=escape(r.label),
                line=dict(dash="dash" if r.random_init else "solid"),
                customdata=[[p.min_ms, p.peak_memory_mb, p.runs] for p in r.points],
                hovertemplate=(
                    f"{escape(r.label)}<br>length %{{x}}<br>median %{{y:.1f}} ms"
                    "<br>best %{customdata[0]:.1f} ms, %{customdata[2]} runs"
                    "<br>peak %{customdata[1]:.1f} MiB<extra></extra>"
                ),
            )
        )
    device = results[0].device if results else ""
    batch = results[0].points[0].batch_size if results and results[0].points else 1
    fig.update_layout(
        title=escape(f"Forward pass on {device}, batch {batch}: median of the timed runs"),
        xaxis=dict(title="sequence length (tokens)", type="log", tickvals=sorted({p.length for r in results for p in r.points})),
        yaxis=dict(title="milliseconds", type="log"),
        template="plotly_white",
        height=420,
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


def benchmark_notes_html(results: list[BenchmarkResult], refused: tuple[SkippedModel, ...]) -> str:
    """What was measured, which rows are random-init, and what was skipped and why."""
    items = []
    for r in results:
        skipped = "; ".join(f"{n} tokens: {escape(why)}" for n, why in r.skipped)
        items.append(
            f"<li><b>{escape(r.model_key)}</b>: {escape(r.weights_detail)}, {r.params:,} parameters, "
            f"{escape(r.device)} {escape(r.dtype)}, attention {escape(r.attention)}, "
            f"{r.warmup_runs} warm-up run(s) per length"
            + (f"; skipped: {skipped}" if skipped else "") + "</li>"
        )
    items += [f"<li><b>{escape(s.model_key)}</b>: not run: {escape(s.reason)}</li>" for s in refused]
    memory = escape(results[0].memory_measure) if results else ""
    return f"<div class='compare-bench-notes'><ul>{''.join(items)}</ul><p>Peak memory: {memory}.</p></div>"


# --- "Same data, same budget": the mini zoo ------------------------------------------------

_ZOO_COLOURS = qualitative.Plotly  # one colour per family, the same in both panels


def zoo_frame(entries: tuple[ZooEntry, ...]) -> pd.DataFrame:
    """One row per family: budget, costs, size and scores (fractions shown as percentages)."""
    rows = []
    for e in entries:
        rows.append({
            "model": e.key,
            "family": e.family,
            "tokenizer": e.tokenizer_kind,
            "training tokens": count(e.tokens),
            "steps": count(e.steps),
            "wall minutes": round(e.wall_minutes, 1),
            "tokens/s": count(round(e.tokens_per_s)),
            "CPU minutes": round(e.cpu_minutes, 1),
            "training TFLOPs": round(e.flops / 1e12, 1),
            "parameters": count(e.parameters),
            "held-out whole-word top-1 %": round(100 * e.score, 1),
            "score of": e.scored_model,
            "everyday cloze top-5 %": round(100 * e.everyday_top5, 1),
            "NSP / SOP held-out %": "" if e.pair_accuracy is None else round(100 * e.pair_accuracy, 1),
            "loss per masked piece": "" if e.piece_loss is None else round(e.piece_loss, 2),
            "word-frequency baseline: top-1 % / loss per piece": _baseline_cell(e.baseline_score, e.baseline_piece_loss),
            "tuning chosen": e.tuning,
            "trained on": e.trained_on,
            "the family's idea here": e.idea,
        })
    with_baseline = [e for e in entries if e.baseline_score is not None]
    if with_baseline:  # the flat line of the chart, as a row: what no use of context scores
        scores = [100 * e.baseline_score for e in with_baseline]
        losses = [e.baseline_piece_loss for e in with_baseline]
        rows.append({
            "model": "word-frequency baseline",
            "family": "(none: each piece guessed from its frequency, whatever the context)",
            "held-out whole-word top-1 %": round(sum(scores) / len(scores), 1),
            "score of": f"every family's tokenizer: {min(scores):.1f}-{max(scores):.1f} %",
            "loss per masked piece": round(sum(losses) / len(losses), 2),
            "the family's idea here": "the plateau: a model that has not learnt to use context scores this",
        })
    return pd.DataFrame(rows)


def _baseline_cell(score: float | None, loss: float | None) -> str:
    return "" if score is None else f"{100 * score:.1f} % / {loss:.2f}"


def _curve_words(entries: tuple[ZooEntry, ...]) -> str:
    """Which words the learning curves score: the tuning split's, or the first held-out sentences'."""
    words = sorted({e.curve_words for e in entries if e.curve_words})
    count = "" if not words else f"{words[0]:,}" if len(words) == 1 else f"{words[0]:,}-{words[-1]:,}"
    where = ("the tuning split" if all(e.curve_on_tuning_split for e in entries)
             else "the first held-out sentences")
    return f"{count} words of {where}" if count else where


def zoo_curves_figure(entries: tuple[ZooEntry, ...]) -> go.Figure:
    """Learning curves of every family against tokens seen: the score (top) and the training loss.

    The curves are scored while training on a small set of held-out words (the tuning split when
    the run had a search); the table's score is the final model on the other held-out words, drawn
    as a star at each curve's end, so that chart and table can be read against each other.
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, subplot_titles=(
        f"whole-word top-1 (%) while training, on {_curve_words(entries)}; "
        "★ the final score on the other held-out words (the table's)",
        "training loss: each family's own objective (the sum of its parts), not comparable across them",
    ))
    dashes = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid"]
    baseline_shown = final_shown = False
    for k, e in enumerate(entries):
        x = [p[0] / 1e6 for p in e.curve]
        colour = _ZOO_COLOURS[k % len(_ZOO_COLOURS)]
        style = dict(mode="lines+markers", legendgroup=e.key,
                     line=dict(dash=dashes[k % len(dashes)], width=2, color=colour))
        fig.add_trace(go.Scatter(
            x=x, y=[100 * p[1] for p in e.curve], name=escape(e.key), **style,
            hovertemplate=f"{escape(e.key)}<br>%{{x:.2f}} M tokens<br>%{{y:.1f}} % words right<extra></extra>",
        ), row=1, col=1)
        fig.add_trace(go.Scatter(
            x=x, y=[p[2] for p in e.curve], name=escape(e.key), showlegend=False, **style,
            hovertemplate=f"{escape(e.key)}<br>%{{x:.2f}} M tokens<br>training loss %{{y:.3f}}<extra></extra>",
        ), row=2, col=1)
        if x:  # the table's score, at the end of the curve
            fig.add_trace(go.Scatter(
                x=[x[-1]], y=[100 * e.score], mode="markers", legendgroup="final",
                name="★ final score on the other held-out words (the table's)", showlegend=not final_shown,
                marker=dict(symbol="star", size=13, color=colour, line=dict(width=1, color="#333")),
                hovertemplate=(f"{escape(e.key)}, the table's score: %{{y:.1f}} % of the held-out words "
                               "right<extra></extra>"),
            ), row=1, col=1)
            final_shown = True
        baseline = e.curve_baseline if e.curve_baseline is not None else e.baseline_score
        if baseline is not None and x:  # its word-frequency baseline on the curve's words: a flat dotted line
            fig.add_trace(go.Scatter(
                x=[0, x[-1]], y=[100 * baseline] * 2, mode="lines", legendgroup="baseline",
                name="word-frequency baseline (dotted, one per tokenizer)", showlegend=not baseline_shown,
                line=dict(dash="2px,5px", width=1.5, color=colour),
                hovertemplate=(f"{escape(e.key)}'s word-frequency baseline: %{{y:.1f}} % words right "
                               "(each piece guessed from its frequency alone)<extra></extra>"),
            ), row=1, col=1)
            baseline_shown = True
    fig.update_layout(
        title="Same corpus, same token budget: learning curves while training",
        template="plotly_white", height=640, margin=dict(l=10, r=10, t=70, b=10),
        legend=dict(orientation="h", y=-0.12),
    )
    fig.update_annotations(font_size=12)
    fig.update_yaxes(title_text="words right (%)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="loss (log scale)", type="log", row=2, col=1)  # ELECTRA's 50 x RTD sits far above
    fig.update_xaxes(title_text="training tokens seen (millions)", row=2, col=1)
    return fig


LEARNT_NATS = 1.0  # a family "left the plateau" when its loss per piece is this far below its baseline


def zoo_findings_md(entries: tuple[ZooEntry, ...]) -> str:
    """What the shipped zoo shows, written from its records (so it fits whichever run ships)."""
    if not entries:
        return ""
    tokens = sorted({e.tokens for e in entries})
    where = sorted({e.trained_on for e in entries if e.trained_on})
    learnt = [e for e in entries if e.baseline_piece_loss is not None and e.piece_loss is not None
              and e.baseline_piece_loss - e.piece_loss >= LEARNT_NATS]
    stuck = [e for e in entries if e.baseline_piece_loss is not None and e not in learnt]

    def named(group):
        return ", ".join(f"**{escape(e.key)}** ({100 * e.score:.1f} %, {e.baseline_piece_loss - e.piece_loss:+.2f} nats)"
                         for e in group)

    low, high = f"{tokens[0] / 1e6:.1f}", f"{tokens[-1] / 1e6:.1f}"
    parts = [f"**What the shipped run shows** ({low if low == high else low + '-' + high}"
             + f" M training tokens per family, trained on {', '.join(escape(w) for w in where) or 'this machine'}). "]
    if learnt or stuck:
        parts.append(f"Left the word-frequency plateau (loss per masked piece at least {LEARNT_NATS:g} nat below the "
                     f"word-frequency baseline on the same words; held-out whole-word top-1 and the gap in brackets): "
                     f"{named(learnt) or 'none'}. ")
        if stuck:
            parts.append(f"Still on or near it: {named(stuck)}. ")
    local = [e for e in entries if e.locality_start]
    if local:
        albert_mapping = (", and ALBERT's embedding mapping norm-preserving"
                          if any(e.key == "mini-albert" for e in local) else "")
        parts.append(f"{', '.join(escape(e.key) for e in local)} (a learnt absolute position table) began with the "
                     "locality start: the table as sinusoids, two heads per layer as previous- and next-token "
                     f"heads{albert_mapping}, all still trained. With transformers' random start these families stayed on the "
                     "plateau for 21.7 M tokens, while DeBERTa's relative and ModernBERT's rotary positions "
                     "left it within a few hundred steps: an absolute table must first discover which positions "
                     "are neighbours. ")
    tuned = [e for e in entries if e.tuning]
    if tuned:
        searches = sorted({e.tuning_search for e in tuned})
        lead = (f"Each family got the same tuning search ({escape(searches[0])})" if searches[0] else
                "Each family got the same tuning search") if len(searches) == 1 else \
            "The families' tuning searches differ (each card gives its own)"
        parts.append(f"{lead}; chosen: "
                     + "; ".join(f"{escape(e.key)} {escape(e.tuning)}" for e in tuned) + ". ")
    pairs = [e for e in entries if e.pair_accuracy is not None]
    if pairs:
        parts.append("Sentence-pair heads on held-out pairs: "
                     + "; ".join(f"{escape(e.key)} {100 * e.pair_accuracy:.1f} % (majority {100 * e.pair_majority:.1f} %"
                                 + ("" if e.pair_reference is None else
                                    f"; a bag-of-words order model on the same pairs {100 * e.pair_reference:.1f} %")
                                 + ")" for e in pairs) + ". ")
    for e in entries:
        if e.rtd_auc is not None:
            parts.append(f"ELECTRA's discriminator separates its generator's replacements from original tokens "
                         f"with a ROC AUC of {e.rtd_auc:.2f} (0.5: no better than chance). ")
    parts.append("These are miniatures trained here, not the published models.")
    return "".join(parts)
