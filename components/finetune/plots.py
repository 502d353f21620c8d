"""Figures, tables and HTML of the "Fine-tuning & search" tab: core results in, views out.

No Gradio and no model calls. User text (queries, sentences to classify) and corpus text are
escaped before they reach HTML or a Plotly label.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models import Classification, ClassifierResult, ProbeLayersResult, RetrievalReport, SearchResult

from ..shell.common import escape, show_token


def training_curves(result: ClassifierResult) -> go.Figure:
    """Loss and accuracy per epoch, training and validation, with the majority baseline."""
    epochs = list(range(1, result.epochs + 1))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Loss (cross-entropy)", "Accuracy"))
    for values, name, colour, col in (
        (result.train_loss, "training", "#1f77b4", 1),
        (result.validation_loss, "validation", "#d62728", 1),
        (result.train_accuracy, "training", "#1f77b4", 2),
        (result.validation_accuracy, "validation", "#d62728", 2),
    ):
        fig.add_trace(go.Scatter(x=epochs, y=list(values), name=name, mode="lines+markers",
                                 line={"color": colour}, legendgroup=name, showlegend=col == 1), 1, col)
    fig.add_trace(go.Scatter(x=[1, result.epochs], y=[result.majority_baseline] * 2, mode="lines",
                             name=f"majority baseline ({escape(result.majority_label)})",
                             line={"color": "grey", "dash": "dash"}), 1, 2)
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig.update_layout(height=360, margin={"t": 40, "b": 40, "l": 50, "r": 20},
                      title=escape(f"{result.model_key} on {result.task}"))
    return fig


def summary_markdown(result: ClassifierResult) -> str:
    how = "frozen encoder (a probe)" if result.freeze else "fine-tuned copy of the encoder"
    units = "sentences" if result.kind == "sequence" else "words"
    return (
        f"**Validation accuracy {result.final_validation_accuracy:.1%}** vs majority baseline "
        f"{result.majority_baseline:.1%} (always “{html.escape(result.majority_label)}”); training "
        f"accuracy {result.train_accuracy[-1]:.1%}.  \n"
        f"Head: **{result.head_parameters:,} parameters** ({len(result.labels)} × d + {len(result.labels)}); "
        f"body: {result.body_parameters:,} ({how}); layer {result.layer}, {result.pooling}.  \n"
        f"{result.train_examples:,} training sentences ({result.train_units:,} {units}), "
        f"{result.validation_examples:,} validation sentences ({result.validation_units:,} {units}); "
        f"{result.seconds:.1f} s.  \n{html.escape(result.note)}"
    ) + scores_markdown(result.scores)


def scores_markdown(scores) -> str:
    """The task's held-out figure per label, the head's against each baseline's, as a table."""
    if scores is None:
        return ""
    columns = [html.escape(r) for r in scores.rows]
    lines = [f"| {html.escape(scores.metric)} | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, values in (("trained head", scores.model), *scores.baselines):
        lines.append(f"| {html.escape(name)} | " + " | ".join(f"{v:.1%}" for v in values) + " |")
    lines.append("| held out (count) | " + " | ".join(f"{n:,}" for n in scores.support) + " |")
    return "\n\n**On the held-out split, beside its baselines:**\n\n" + "\n".join(lines)


def tasks_frame(tasks) -> pd.DataFrame:
    return pd.DataFrame([{
        "task": t.name, "kind": t.kind, "labels": ", ".join(t.labels), "train": t.train_size,
        "validation": t.validation_size, "what is predicted": t.description, "labels come from": t.label_source,
    } for t in tasks])


def classification_html(result: Classification, colours: dict) -> str:
    """The prediction: class probabilities as bars, or each word coloured by its label (escaped)."""
    if result.kind == "sequence":
        rows = sorted(zip(result.labels, result.probabilities), key=lambda x: -x[1])
        bars = "".join(
            f'<div class="head-prob"><span style="display:inline-block;width:9em">{html.escape(label)}</span>'
            f'<span style="display:inline-block;height:0.8em;width:{p * 20:.2f}em;background:#4c78a8"></span> '
            f"{p:.1%}</div>"
            for label, p in rows
        )
        return f"<div><b>{html.escape(result.predicted[0])}</b>{bars}</div>"
    parts, last = [], 0
    for (start, end), label, probs in zip(result.spans, result.predicted, result.probabilities):
        parts.append(html.escape(result.text[last:start]))
        title = ", ".join(f"{name} {p:.0%}" for name, p in zip(result.labels, probs))
        # the label also as text under the word: readable without colour and without hovering
        parts.append(f'<mark style="background:{colours.get(label, "#ddd")};color:#111" title="{html.escape(title)}">'
                     f"{html.escape(result.text[start:end])}<sub class='head-label'>{html.escape(label)}</sub></mark>")
        last = end
    parts.append(html.escape(result.text[last:]))
    legend = " ".join(f'<mark style="background:{colours.get(n, "#ddd")}">{html.escape(n)}</mark>'
                      for n in result.labels)
    return f'<div class="head-tokens" style="line-height:2">{"".join(parts)}</div><div>{legend}</div>'


def probe_chart(result: ProbeLayersResult) -> go.Figure:
    layers = list(result.layers)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=layers, y=list(result.validation_accuracy), mode="lines+markers",
                             name="validation accuracy", line={"color": "#d62728"}))
    fig.add_trace(go.Scatter(x=layers, y=list(result.train_accuracy), mode="lines+markers",
                             name="training accuracy", line={"color": "#1f77b4", "dash": "dot"}))
    fig.add_trace(go.Scatter(x=[layers[0], layers[-1]], y=[result.majority_baseline] * 2, mode="lines",
                             name="majority baseline", line={"color": "grey", "dash": "dash"}))
    fig.update_layout(height=340, margin={"t": 40, "b": 40, "l": 50, "r": 20},
                      title=escape(f"A probe on each layer: {result.model_key}, {result.task} ({result.pooling})"),
                      xaxis_title="layer (0 = input embeddings)", yaxis={"range": [0, 1.02], "title": "accuracy"})
    return fig


HITS_COLUMNS = ["rank", "score", "source", "sentence"]
HITS_COLUMN_WIDTHS = ["7%", "9%", "14%", "70%"]  # left to the content, "rank" broke in two


def hits_frame(result: SearchResult) -> pd.DataFrame:
    return pd.DataFrame([{"rank": h.rank, "score": round(h.score, 4), "source": h.source or "?",
                          "sentence": h.text} for h in result.hits], columns=HITS_COLUMNS)


def report_markdown(report: RetrievalReport) -> str:
    low, median, high = report.norm_spread
    recall = ", ".join(f"{'[CLS]' if p == 'cls' else p} {r:.1%}" for p, r in report.pooling_recall.items())
    return (
        f"**ANN recall@{report.k}: {report.ann_recall:.1%}** of the exact top-{report.k} "
        f"({report.queries} queries, {report.corpus_size:,} sentences). Time per query: exact "
        f"{report.exact_ms:.3f} ms, ANN {report.ann_ms:.3f} ms (this machine, now; small corpora "
        f"favour brute force).  \n"
        f"**Dot product on unnormalised vectors** keeps {report.dot_overlap:.1%} of the cosine "
        f"top-{report.k} (vector lengths from {low:.2f} to {high:.2f}, median {median:.2f}).  \n"
        f"**Paraphrase search, recall@{report.k}** ({report.pooling_queries} queries): {recall}.  \n"
        f"{html.escape(report.note)}"
    )


def class_attribution_columns(methods) -> list[str]:
    """The table's columns: the token's position and text, then one per method."""
    return ["position", "token", *methods]


def class_attribution_frame(results) -> pd.DataFrame:
    """One row per token: each method's score with its rank (text, readable without colour)."""
    rows = []
    ranks = []
    for r in results:
        order = sorted((i for i, c in enumerate(r.candidates) if c), key=lambda i: (-r.scores[i], i))
        ranks.append({i: k + 1 for k, i in enumerate(order)})
    for i, token in enumerate(results[0].tokens):
        row = {"position": i, "token": show_token(token)}
        for r, rank in zip(results, ranks):
            row[r.method] = f"{r.scores[i]:+.4f}" + (f" (#{rank[i]})" if i in rank else " (special)")
        rows.append(row)
    return pd.DataFrame(rows, columns=class_attribution_columns([r.method for r in results]))


def class_attribution_note(results) -> str:
    """The class explained, and how each method held up when its top tokens were removed."""
    first = results[0]
    parts = [f"Explaining **{escape(first.label)}** (p = {first.probability:.3f}); removed tokens become "
             f"{escape(first.replacement)}. Deletion check, area between random and the method's order "
             "(higher: its top tokens mattered more than random ones):"]
    for r in results:
        gap = f", completeness gap {r.completeness_delta:+.4f}" if r.completeness_delta is not None else ""
        parts.append(f"- {r.method}: {r.area:+.4f}{gap}")
    return "\n".join(parts)
