"""Numbers quoted in the help texts, measured again (the texts must say what the models do)."""

from __future__ import annotations

import numpy as np
import pytest

from components.embeddings import copy as embeddings_copy
from models import bank_demo, word_in_context


def test_embeddings_help_describes_the_default_curve():
    word, sentences = bank_demo()
    result = word_in_context("minilm-l6", list(sentences), word)
    mean = np.round(result.mean_cosine(), 2)
    # "falls from 0.98 at layer 0 to 0.83 at layer 3, rises again in layers 4–5 (0.85, 0.87)
    # and falls to 0.77 at the last layer"
    assert (mean[0], mean[3], mean[4], mean[5], mean[-1]) == (0.98, 0.83, 0.85, 0.87, 0.77)
    assert mean[4] > mean[3] and mean[5] > mean[4] and mean[-1] < mean[5]
    for quoted in ("0.98", "0.83", "0.85, 0.87", "0.77", "0.90 against 0.79"):
        assert quoted in embeddings_copy.WORD_HELP
    # the two river sentences (0, 1) vs the two money sentences (2, 3)
    assert "river" in sentences[0] and "river" in sentences[1] and "river" not in sentences[2] + sentences[3]
    for layer in range(1, len(result.layers)):
        c = result.cosine[layer]
        within = (c[0, 1] + c[2, 3]) / 2
        across = c[np.ix_([0, 1], [2, 3])].mean()
        assert within > across, layer
    c = result.cosine[3]
    assert round(float((c[0, 1] + c[2, 3]) / 2), 2) == 0.90 and round(float(c[np.ix_([0, 1], [2, 3])].mean()), 2) == 0.79


def test_readme_gives_the_recorded_runs_stages():
    """The README's Pre-training line names as many stages as the recorded run (weights/minilm-mlm)
    has, and the later ones as the curve's marks."""
    import re
    from pathlib import Path

    from models import SHIPPED_RUN, load_history

    stages = len(load_history(SHIPPED_RUN).stage_starts) + 1
    words = {2: "two", 3: "three", 4: "four", 5: "five"}
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    line = re.search(r"\*\*Pre-training\*\*.*?\(([^)]*stages[^)]*)\)", readme, re.S).group(1)
    assert line.startswith(f"{words[stages]} stages") and f"stages 2 to {stages}" in line, line


def test_the_zoo_shape_stated_in_compare_and_the_readme_is_the_zoo_s():
    """The shape the Compare tab's zoo help and the README give for the whole mini zoo, against
    the same tab's architecture table (computed from each shipped miniature's config)."""
    import re
    from pathlib import Path

    from components.compare import copy as compare_copy
    from models import architecture_table

    facts = {f.model_key: f for f in architecture_table() if f.model_key.startswith("mini-")}
    if facts["mini-bert"].hidden != 128:
        pytest.skip("the shipped zoo is not here (the test zoo is smaller)")
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    shape = re.compile(r"(\d+) layers, (\d+) wide, (\d+) heads, FFN (\d+)(?: \(ModernBERT: GeGLU's input\s+"
                       r"projection, 2 × (\d+))?")
    for where, text in (("Compare", compare_copy.ZOO_HELP), ("README", readme)):
        layers, hidden, heads, ffn, modernbert_half = (int(g) if g else None for g in shape.search(text).groups())
        assert "8,192-token vocabulary" in text, where
        for key, f in facts.items():
            assert (f.layers, f.hidden, f.heads, f.vocab_size) == (
                layers // 2 if key == "mini-distilbert" else layers, hidden, heads, 8192), (where, key)
            if key == "mini-modernbert" and modernbert_half is not None:
                assert (f.ffn, 2 * f.ffn) == (modernbert_half, ffn), (where, key)  # the gate halves Wi's output
            else:
                assert f.ffn == ffn, (where, key, "FFN")
