"""Figure and table builders on small hand-made results: structure and escaping."""

from __future__ import annotations

from html.parser import HTMLParser

from components.fill_mask import plots as fill_mask_plots

from components.models import plots as models_plots
from components.shell.common import error_figure, show_token
from models import FillMaskResult, list_models
from models.mlm.results import MaskPrediction, Prediction


def _result(tokens_per_mask):
    masks = tuple(
        MaskPrediction(
            index=i,
            position=2 + 3 * i,
            predictions=tuple(
                Prediction(token=t, token_id=100 + j, score=s, raw_token=t)
                for j, (t, s) in enumerate(preds)
            ),
        )
        for i, preds in enumerate(tokens_per_mask)
    )
    return FillMaskResult("splade-tiny", "x", ("[CLS]",), masks, "x")


def test_predictions_frame_rows_in_mask_then_rank_order():
    df = fill_mask_plots.predictions_frame(_result([[("cat", 0.5), ("dog", 0.25)], [("mat", 0.75)]]))
    assert list(df.columns) == ["mask", "rank", "token", "probability"]
    assert df[["mask", "rank", "token"]].values.tolist() == [[1, 1, "cat"], [1, 2, "dog"], [2, 1, "mat"]]
    assert df["probability"].tolist() == [0.5, 0.25, 0.75]


def test_figure_has_one_panel_per_mask_best_on_top():
    fig = fill_mask_plots.fill_mask_figure(_result([[("cat", 0.5), ("dog", 0.25)], [("mat", 0.75)]]))
    assert len(fig.data) == 2
    first = fig.data[0]
    assert list(first.x) == [0.25, 0.5]  # drawn bottom-up: the best bar ends on top
    assert list(first.y) == ["2. dog", "1. cat"]
    assert [a.text for a in fig.layout.annotations] == ["mask 1 (token position 2)", "mask 2 (token position 5)"]


def _reference_figure(result):
    """The figure as plotly's validating API builds it (make_subplots, add_trace, templates)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from components.shell.common import escape

    n = len(result.masks)
    fig = make_subplots(rows=n, cols=1, vertical_spacing=min(0.12, 0.3 / n), subplot_titles=[
        f"mask {m.index + 1} (token position {m.position})" for m in result.masks])
    for row, mask in enumerate(result.masks, start=1):
        scores = [p.score for p in mask.predictions][::-1]
        labels = [f"{r}. {escape(show_token(p.token))}" for r, p in enumerate(mask.predictions, start=1)][::-1]
        fig.add_trace(go.Bar(x=scores, y=labels, orientation="h", text=[f"{s:.1%}" for s in scores],
                             textposition="auto", hovertemplate="%{y}<br>p = %{x:.4f}<extra></extra>",
                             marker_color="#4c78a8", showlegend=False), row=row, col=1)
        fig.update_xaxes(range=[0, 1], tickformat=".1%", row=row, col=1)
        fig.update_yaxes(type="category", row=row, col=1)
    fig.update_layout(height=80 + n * (40 + 26 * max(len(m.predictions) for m in result.masks)),
                      margin=dict(l=10, r=10, t=40, b=10), xaxis_title=None, template="plotly_white")
    return fig


def test_fast_figure_is_the_json_plotly_validates():
    import json

    for masks in ([[("cat", 0.5), ("<s>", 0.25)]],
                  [[("cat", 0.5), ("dog", 0.25)], [("mat", 0.75)], [("##s", 0.1), ("a", 0.05), ("b", 0.01)]],
                  [[(f"w{i}", 0.5)] for i in range(10)]):
        result = _result(masks)
        ours = fill_mask_plots.fill_mask_figure(result)
        assert json.loads(ours.to_json()) == json.loads(_reference_figure(result).to_json())
    # Each call is a figure of its own: changing one leaves the next call's untouched.
    first = fill_mask_plots.fill_mask_figure(_result([[("cat", 0.5)]]))
    first.layout.annotations[0].text = "changed"
    first.layout.xaxis.range = [0, 9]
    again = fill_mask_plots.fill_mask_figure(_result([[("cat", 0.5)]]))
    assert again.layout.annotations[0].text == "mask 1 (token position 2)"
    assert list(again.layout.xaxis.range) == [0, 1]


def test_every_masks_panel_shares_one_probability_scale():
    """As the HTML bars: 17 % is drawn shorter than 71 % whichever mask each belongs to."""
    fig = fill_mask_plots.fill_mask_figure(_result([[("door", 0.713), ("window", 0.1)], [("kitchen", 0.171)]]))
    ranges = [list(fig.layout[f"xaxis{'' if row == 1 else row}"].range) for row in (1, 2)]
    assert ranges == [[0, 1], [0, 1]]


def test_tokens_are_escaped_in_figures():
    evil = '<a href="javascript:alert(1)">x</a>'
    fig = fill_mask_plots.fill_mask_figure(_result([[("<s>", 0.6), (evil, 0.3)]]))
    labels = list(fig.data[0].y)
    assert "1. &lt;s&gt;" in labels
    assert all("<" not in label for label in labels)
    err = error_figure("<script>alert(1)</script>")
    assert "<script>" not in err.layout.annotations[0].text


class _Cells(HTMLParser):
    """The bars' HTML read back as a browser would: captions, cells' text, bar widths, tags."""

    def __init__(self):
        super().__init__()
        self.tags, self.captions, self.rows, self.widths = [], [], [], []
        self._in, self._text = None, ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        style = dict(attrs).get("style") or ""
        if style.startswith("width:"):
            self.widths.append(float(style[len("width:"):].rstrip("%")))
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th", "caption"):
            self._in, self._text = tag, ""

    def handle_endtag(self, tag):
        if tag == "caption":
            self.captions.append(self._text)
        elif tag in ("td", "th"):
            self.rows[-1].append(self._text)
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in:
            self._text += data


def test_bars_html_lists_each_masks_predictions_with_bars_as_long_as_their_probability():
    evil = '<a href="javascript:alert(1)">x</a>'
    result = _result([[("cat", 0.5), (" dog", 0.25)], [("<s>", 0.625), (evil, 0.125)]])
    cells = _Cells()
    cells.feed(fill_mask_plots.fill_mask_bars_html(result))
    assert cells.captions == ["mask 1 (token position 2)", "mask 2 (token position 5)"]
    body = [row for row in cells.rows if row[0] != "rank"]
    assert body == [["1.", "cat", "50.0%"], ["2.", "␣dog", "25.0%"], ["1.", "<s>", "62.5%"], ["2.", evil, "12.5%"]]
    assert cells.widths == [50.0, 25.0, 62.5, 12.5]  # of the track: the probability itself
    assert set(cells.tags) <= {"table", "caption", "thead", "tbody", "tr", "th", "td", "div", "span"}  # tokens stay text
    # the table beside it holds the same predictions in the same order
    table = fill_mask_plots.predictions_table(result)["data"]
    assert [(r[2], f"{r[3]:.1%}") for r in table] == [(row[1], row[2]) for row in body]


def test_spaces_in_tokens_are_visible():
    assert show_token(" cat") == "␣cat"
    assert show_token("cat") == "cat"
    assert show_token("") == "∅"


def test_models_frame_lists_every_model_with_provenance():
    models = list_models()
    df = models_plots.models_frame(models)
    assert len(df) == len(models)
    assert df["provenance"].str.len().min() > 20
    assert df["available here"].str.contains("default").sum() == 1


def test_the_live_answers_table_and_chart_are_what_gradio_makes_of_the_frame_and_figure():
    """The tab hands Gradio rows and the chart's JSON: the page receives the same as from the
    pandas frame and the plotly figure."""
    import json

    import gradio as gr

    for masks in ([[("cat", 0.5), ("<s>", 0.25), (" dog", 0.123456789)]],
                  [[("cat", 0.5), ("dog", 0.25)], [("mat", 0.75)], [("##s", 0.1), ("a", 0.05), ("b", 0.01)]]):
        result = _result(masks)
        table = gr.Dataframe(interactive=False)
        assert (table.postprocess(fill_mask_plots.predictions_table(result)).model_dump()
                == table.postprocess(fill_mask_plots.predictions_frame(result)).model_dump())
        assert (json.loads(fill_mask_plots.fill_mask_figure_json(result))
                == json.loads(gr.Plot().postprocess(fill_mask_plots.fill_mask_figure(result)).plot))


def test_the_models_tab_shows_the_memory_budget_and_what_it_keeps(mlm_loaded):
    from components.models.tab import memory_view
    from models import memory_budget

    text = memory_view()
    report = memory_budget()
    assert f"**Memory budget: {report.budget_bytes / 2**30:.2f} GiB**" in text and report.source in text
    # the models' part counts at least the loaded MLM's tensors, measured here apart from the cache
    model = mlm_loaded.model
    measured = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    models_part = next(b for part, n, b in report.parts if part == "models")
    assert models_part >= measured and "models " in text
