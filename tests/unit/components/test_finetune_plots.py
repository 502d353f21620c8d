"""The Fine-tuning & search tab's tables (no model run: results built by hand)."""

from __future__ import annotations

from models import SearchResult
from models.embeddings.retrieval import SearchHit
from components.finetune import plots


def _result(hits) -> SearchResult:
    return SearchResult("minilm-l6", "a whale", "mean", "exact", 3191, tuple(hits), 0.4)


def test_hits_table_keeps_its_columns_even_without_hits_and_has_one_width_each():
    hit = SearchHit(rank=1, score=0.812345, text="The whale dived.", source="", corpus_index=7)
    frame = plots.hits_frame(_result([hit]))
    assert frame.values.tolist() == [[1, 0.8123, "?", "The whale dived."]]
    assert list(frame.columns) == ["rank", "score", "source", "sentence"]
    assert list(plots.hits_frame(_result([])).columns) == ["rank", "score", "source", "sentence"]
    assert len(plots.HITS_COLUMN_WIDTHS) == len(frame.columns)
    assert sum(float(w.rstrip("%")) for w in plots.HITS_COLUMN_WIDTHS) == 100


def test_scores_table_puts_the_head_beside_each_baseline():
    from models.tasks.task_scores import TaskScores

    scores = TaskScores("entity F1 (exact spans)", ("PER", "LOC", "<b>all</b>"), (0.5, 0.75, 0.625),
                        (("lookup", (0.0, 0.25, 0.125)),), (2, 4, 6))
    table = plots.scores_markdown(scores)
    rows = [line for line in table.splitlines() if line.startswith("|")]
    assert rows[0] == "| entity F1 (exact spans) | PER | LOC | &lt;b&gt;all&lt;/b&gt; |"
    assert rows[2] == "| trained head | 50.0% | 75.0% | 62.5% |"
    assert rows[3] == "| lookup | 0.0% | 25.0% | 12.5% |"
    assert rows[4] == "| held out (count) | 2 | 4 | 6 |"
    assert plots.scores_markdown(None) == ""
