"""The "Why this guess" builders on small hand-made results (no model)."""

from __future__ import annotations

import re

import pytest

from components.attribution import plots
from models import AttributionResult, DeletionCurve

TOKENS = ("[CLS]", "<script>", "opened", "[MASK]", "door", "[SEP]")
CANDIDATES = (False, True, True, False, True, False)


def _result(method: str, scores) -> AttributionResult:
    return AttributionResult(
        model_key="m", text="t", method=method, tokens=TOKENS, scores=tuple(scores),
        candidates=CANDIDATES, mask_index=0, mask_position=3, target_token="door", target_id=7,
        target_probability=0.5, replacement="[MASK]",
    )


def test_sentence_rows_escape_tokens_and_rank_by_score():
    page = plots.attribution_html([_result("leave_one_out", [9, -0.2, 0.3, 9, 0.1, 9])])
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count('class="attribution-row"') == 1 and "leave-one-out" in page
    ranked = re.findall(r"<b>#(\d)</b> ([^<]+)<br>", page)
    assert ranked == [("3", "&lt;script&gt;"), ("1", "opened"), ("2", "door")]
    assert page.count('title="not scored"') == 3  # specials and the mask, whatever their score
    assert "-0.200" in page and "+0.300" in page  # scores readable as text


def test_scores_frame_blanks_what_is_not_scored():
    frame = plots.scores_frame([_result("gradient_x_input", [1, 2, 3, 4, 5, 6])])
    assert list(frame.columns) == ["position", "token", "gradient × input"]
    assert frame["gradient × input"].isna().tolist() == [not c for c in CANDIDATES]
    assert frame["gradient × input"][2] == 3


def test_deletion_figure_one_line_per_method_and_random_dashed():
    curves = [
        DeletionCurve("m", "t", method, TOKENS, order=(2, 4, 1), attributed=(0.5, y, 0.1, 0.0),
                      random=(0.5, 0.4, 0.2, 0.0), random_orders=5, area=area, target_token="door",
                      target_id=7, replacement="[MASK]")
        for method, y, area in (("leave_one_out", 0.2, 0.15), ("attention_rollout", 0.45, 0.02))
    ]
    fig = plots.deletion_figure(curves)
    names = [trace.name for trace in fig.data]
    assert names == ["leave-one-out (area +0.150)", "attention rollout (area +0.020)",
                     "random order (mean of 5)"]
    assert fig.data[-1].line.dash == "dash"
    assert list(fig.data[0].x) == pytest.approx([0, 1 / 3, 2 / 3, 1])
    assert list(fig.data[0].customdata) == ["(none)", "opened", "door", "&lt;script&gt;"]


@pytest.mark.parametrize("delta, warned", [(0.001, False), (0.04, True)])
def test_status_names_the_baseline_and_warns_on_a_large_completeness_gap(delta, warned):
    from dataclasses import replace

    ig = replace(_result("integrated_gradients", [0, 0.1, 0.2, 0, 0.15, 0]),
                 baseline="every token but … replaced by [MASK]", baseline_probability=0.1,
                 completeness_delta=delta, n_steps=32)
    text = plots.status_markdown([ig], [])
    assert "replaced by [MASK]" in text and "p(text) − p(baseline) = +0.4000" in text
    assert f"completeness gap {delta:+.5f}" in text
    assert ("raise the steps" in text) is warned


def test_a_target_the_model_gives_almost_no_probability_gets_no_advice_and_no_winner():
    """p(target) ≈ 1e-9: IG's gap compared with a difference of ~0 is no reason to raise the
    steps, and deletion areas of ~1e-7 crown no method."""
    from dataclasses import replace

    tiny = [replace(_result(m, [0, -1e-9, 2e-9, 0, -3e-9, 0]), target_probability=1.2e-9)
            for m in ("integrated_gradients", "leave_one_out")]
    tiny[0] = replace(tiny[0], baseline="every token replaced by [MASK]", baseline_probability=1.9e-7,
                      completeness_delta=-1.0e-8, n_steps=32)
    curves = [DeletionCurve("m", "t", method, TOKENS, order=(2, 4, 1), attributed=(1.2e-9, 9e-10, 8e-10, 7e-10),
                            random=(1.2e-9, 1.2e-9, 1.1e-9, 1e-9), random_orders=5, area=area,
                            target_token="door", target_id=7, replacement="[MASK]")
              for method, area in (("integrated_gradients", 1.2e-7), ("leave_one_out", 1.4e-7))]
    text = plots.status_markdown(tiny, curves)
    assert "raise the steps" not in text
    assert "held up best" not in text
    assert "almost no probability" in text and "1.2e-09" in text
    assert "no method stands out" in text


def test_areas_too_small_to_read_crown_no_method_on_a_likely_target():
    curves = [DeletionCurve("m", "t", "leave_one_out", TOKENS, order=(2, 4, 1), attributed=(0.5, 0.5, 0.5, 0.5),
                            random=(0.5, 0.5, 0.5, 0.5), random_orders=5, area=0.0002, target_token="door",
                            target_id=7, replacement="[MASK]")]
    text = plots.status_markdown([_result("leave_one_out", [0, 0.1, 0.2, 0, 0.15, 0])], curves)
    assert "held up best" not in text and "no method beat random deletion" in text
    assert "almost no probability" not in text  # p = 0.5
