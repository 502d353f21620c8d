"""The retrieval figures docs/fine-tuning.md publishes, measured again on the whole passage index.

Embedding the 18,445 passages takes minutes on two CPU cores: the test runs where the
``minilm-l6`` indexes are already on disk (the app's first search, or ``build_index``, writes
them) and skips, saying how to build them, where they are not."""

from __future__ import annotations

import re

import pytest

from helpers import ENCODER_KEY, REPO
from models import get_spec, retrieval_report
from models.embeddings import retrieval


def _built(pooling: str) -> bool:
    spec = get_spec(ENCODER_KEY)
    files = retrieval._files(ENCODER_KEY, pooling, retrieval.corpus()[2], retrieval._weights_stamp(spec))
    return all(f.exists() for f in files)


def test_the_published_retrieval_figures_are_measured_again():
    if not (_built("mean") and _built("cls")):
        pytest.skip(f"the {ENCODER_KEY} indexes are not on disk: python -c \"from models import build_index; "
                    f"build_index('{ENCODER_KEY}')\" (minutes)")
    doc = (REPO / "docs" / "fine-tuning.md").read_text(encoding="utf-8")
    text = " ".join(doc[doc.index("- **Retrieval**"):doc.index("## Retrieve, then read")].split())
    mean, cls = (retrieval_report(ENCODER_KEY, k=10, pooling=p) for p in ("mean", "cls"))
    assert f"the {mean.corpus_size:,} passages" in text
    assert f"finds {mean.ann_recall:.3f} of the exact top-10 with mean pooling, {cls.ann_recall:.3f} with [CLS]" in text
    assert f"keeps only {mean.dot_overlap:.1%} (mean) / {cls.dot_overlap:.1%} ([CLS])".replace("%", " %") in text
    for report in (mean, cls):
        assert " / ".join(f"{v:.2f}" for v in report.norm_spread) in text
    found = re.search(r"\[CLS\] ([\d.]+) %, mean ([\d.]+) %", text)
    assert (float(found.group(1)), float(found.group(2))) == (round(mean.pooling_recall["cls"] * 100, 1),
                                                              round(mean.pooling_recall["mean"] * 100, 1))
