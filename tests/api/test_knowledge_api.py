"""The knowledge probe's endpoints through gradio_client, against the core."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

from models import knowledge_probe


def test_knowledge_probe_matches_the_core(client):
    summary, table = client.predict("mini-roberta", "everyday", api_name="/knowledge_probe")
    core = knowledge_probe("mini-roberta", "everyday")
    assert table["headers"] == ["topic", "sentence", "top 5", "hit", "accepted"]
    assert [row[1] for row in table["data"]] == [i.text for i in core.items]
    hits = [row[3] for row in table["data"]]
    assert hits.count("✓") == core.top1_hits
    assert sum(h != "·" for h in hits) == core.top5_hits
    assert f"{core.top5_hits}/{core.n}" in summary


def test_compare_knowledge_side_by_side(client):
    summary, table = client.predict("mini-bert", "splade-tiny", "everyday", api_name="/compare_knowledge")
    a, b = knowledge_probe("mini-bert", "everyday"), knowledge_probe("splade-tiny", "everyday")
    assert table["headers"] == ["sentence", "mini-bert: top 5", "mini-bert: hit", "splade-tiny: top 5",
                                "splade-tiny: hit"]
    assert len(table["data"]) == a.n == b.n
    assert [row[0] for row in table["data"]] == [i.text for i in a.items]
    assert [row[2] for row in table["data"]].count("✓") == a.top1_hits
    assert [row[4] for row in table["data"]].count("✓") == b.top1_hits
    assert "mini-bert" in summary and "splade-tiny" in summary


def test_a_model_without_an_mlm_head_is_refused_readably(client):
    with pytest.raises(AppError, match="MLM|mask"):
        client.predict("minilm-l6", "facts", api_name="/knowledge_probe")
