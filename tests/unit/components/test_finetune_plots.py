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
