"""Figures and text of the sentence encoder, pair head, span head and distillation views.

No Gradio and no model calls: core results in, figures / Markdown / HTML out. User text (a
question, a context, a pair) is escaped before it reaches HTML or a Plotly label.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models import DistillResult, PairClassification, SentenceEncoderResult, SpanAnswer, SpanHeadResult

from ..shell.common import escape, show_token

_MARGIN = {"t": 50, "b": 40, "l": 50, "r": 20}


def sentence_loss_chart(result: SentenceEncoderResult) -> go.Figure:
    """The siamese loss per step."""
    fig = go.Figure(go.Scatter(x=list(range(1, len(result.train_loss) + 1)), y=list(result.train_loss),
                               mode="lines", name=f"{result.loss} loss"))
    fig.update_layout(height=300, margin=_MARGIN, xaxis_title="step", yaxis_title=f"{result.loss} loss",
                      title=escape(f"{result.model_key}: {result.loss} loss (margin {result.margin:g}) per step"))
    return fig


def similarity_before_after(result: SentenceEncoderResult) -> go.Figure:
    """The held-out similarity matrix before and after training, side by side."""
    labels = [f"{i + 1}. {escape(s[:40])}" for i, s in enumerate(result.matrix_sentences)]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        f"before: ROC AUC {result.before.auc:.3f}", f"after: ROC AUC {result.after.auc:.3f}"))
    for col, matrix in ((1, result.matrix_before), (2, result.matrix_after)):
        fig.add_trace(go.Heatmap(z=matrix, x=list(range(1, len(labels) + 1)), y=labels, zmin=-1, zmax=1,
                                 colorscale="RdBu", reversescale=True, showscale=col == 2,
                                 customdata=[[escape(g) for g in result.matrix_groups]] * len(labels),
                                 hovertemplate="%{y}<br>with %{x}: cosine %{z:.2f}<extra></extra>"), 1, col)
    fig.update_yaxes(autorange="reversed", showticklabels=False, row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_layout(height=520, margin={"t": 60, "b": 40, "l": 260, "r": 20},
                      title=f"Held-out WordNet synsets (never trained on): cosine of unit mean-pooled vectors")
    return fig


def sentence_summary(result: SentenceEncoderResult) -> str:
    gain_tab = result.tab_after.auc - result.tab_before.auc
    stopped = f" ({html.escape(result.stopped)})" if result.stopped else ""
    return (
        f"**Held-out separation ROC AUC {result.before.auc:.3f} → {result.after.auc:.3f}** "
        f"({result.auc_gain:+.3f}) on {result.heldout_groups} WordNet synsets of words never trained on; "
        f"the Embeddings tab's sentence sets {result.tab_before.auc:.3f} → {result.tab_after.auc:.3f} "
        f"({gain_tab:+.3f}).  \n"
        f"{result.steps_done} of {result.steps} steps{stopped}, {result.seconds:.0f} s. The trained copy is "
        f"**`{html.escape(result.encoder_key)}`**: pick it in search below or in the Embeddings tab "
        "(it lives until the server restarts).  \n"
        f"*{html.escape(result.note)}*"
    )


def pair_summary(result) -> str:
    how = "probe on the frozen encoder" if result.freeze else "fine-tuned copy"
    return (
        f"**Validation accuracy {result.final_validation_accuracy:.1%}** vs majority baseline "
        f"{result.majority_baseline:.1%} (always “{html.escape(result.majority_label)}”).  \n"
        f"Head: **{result.head_parameters:,} parameters** ({len(result.labels)} × d + {len(result.labels)}); "
        f"transformers' {html.escape(result.reference_head)}: {result.reference_parameters:,}; body "
        f"{result.body_parameters:,} ({how}).  \n*{html.escape(result.note)}*"
    )


def pair_html(result: PairClassification) -> str:
    rows = "".join(f"<li>{html.escape(label)}: {p:.1%}</li>" for label, p in zip(result.labels, result.probabilities))
    return (f"<p><b>{html.escape(result.predicted)}</b> for A = “{html.escape(result.text_a)}”, "
            f"B = “{html.escape(result.text_b)}”</p><ul>{rows}</ul>")


def span_summary(result: SpanHeadResult) -> str:
    rows = "\n".join(f"| {html.escape(s)} | {n} | {em:.1%} | {f1:.1%} |" for s, (n, em, f1) in result.per_source.items())
    return (
        f"**Held-out exact match {result.scores.exact_match:.1%}, token F1 {result.scores.f1:.1%}** on "
        f"{result.validation_questions} templated questions about entities never trained on. Baselines that "
        f"read no question: first noun phrase EM {result.first_noun_phrase.exact_match:.1%} (F1 "
        f"{result.first_noun_phrase.f1:.1%}), longest word EM {result.longest_word.exact_match:.1%} (F1 "
        f"{result.longest_word.f1:.1%}).  \n"
        f"Head: **{result.head_parameters:,} parameters** (2 × d + 2) = transformers' "
        f"{html.escape(result.reference_head)} ({result.reference_parameters:,}); body {result.body_parameters:,}.\n\n"
        f"| source | questions | EM | F1 |\n|---|---|---|---|\n{rows}\n\n*{html.escape(result.note)}*"
    )


def span_chart(answer: SpanAnswer) -> go.Figure:
    """P(start) and P(end) over the context's tokens."""
    x = [f"{i}:{escape(show_token(t))}" for i, t in enumerate(answer.tokens)]
    fig = go.Figure([go.Bar(x=x, y=list(answer.start_probabilities), name="P(start)"),
                     go.Bar(x=x, y=list(answer.end_probabilities), name="P(end)")])
    fig.update_layout(barmode="group", height=320, margin=_MARGIN, yaxis={"range": [0, 1], "title": "probability"},
                      title=escape(f"Answer: {answer.answer} (P(start) × P(end) = {answer.score:.2f})"))
    return fig


def span_html(answer: SpanAnswer) -> str:
    c = answer.context
    return (f"<p>{html.escape(c[:answer.start])}<mark style='background:#ffe066;color:#111'><b>{html.escape(c[answer.start:answer.end])}</b></mark>"
            f"{html.escape(c[answer.end:])}</p>")


def distill_chart(result: DistillResult) -> go.Figure:
    """Both students' MLM loss per step (training, thin) and on the held-out sentences (thick:
    what the title's winner is decided on), with their held-out accuracy (dotted, right axis)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for run, colour in ((result.distilled, "#1f77b4"), (result.mlm_only, "#d62728")):
        steps = list(range(1, len(run.train_mlm_loss) + 1))
        fig.add_trace(go.Scatter(x=steps, y=list(run.train_mlm_loss), mode="lines", line={"color": colour},
                                 opacity=0.45, name=f"{run.label}: training MLM loss"), secondary_y=False)
        fig.add_trace(go.Scatter(x=list(run.eval_steps), y=list(run.eval_loss), mode="lines+markers",
                                 line={"color": colour, "width": 3},
                                 name=f"{run.label}: held-out MLM loss"), secondary_y=False)
        fig.add_trace(go.Scatter(x=list(run.eval_steps), y=list(run.eval_accuracy), mode="lines+markers",
                                 line={"color": colour, "dash": "dot"},
                                 name=f"{run.label}: held-out accuracy"), secondary_y=True)
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="MLM loss (nats per masked token)", secondary_y=False)
    fig.update_yaxes(title_text="held-out masked-token accuracy (dotted)", secondary_y=True, rangemode="tozero")
    fig.update_layout(height=380, margin=_MARGIN, title=escape(
        f"{result.student_shape} students, {result.steps_done} steps each: {result.winner}"
        f"{' won' if result.winner != 'tie' else ''} on held-out MLM loss (thick lines) by "
        f"{abs(result.loss_gain):.3f}"))
    return fig


def distill_summary(result: DistillResult) -> str:
    return f"*{html.escape(result.note)}*" + (f"  \n({html.escape(result.stopped)})" if result.stopped else "")
