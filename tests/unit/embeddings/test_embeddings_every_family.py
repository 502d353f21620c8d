"""The Embeddings tab for every family of the mini zoo, from the text boxes as the tab reads
them, through its handlers (``components.embeddings.tab``).

The reference is a second copy of each model (``helpers.zoo_reference``), each sentence run
alone (no padding) with ``output_hidden_states=True``; the pooling, the cosines and the word's
pieces (the tokenizer's own ``char_to_token``) are done by hand here.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import torch

from components.embeddings import tab
from helpers import parity_atol, plotly_array, zoo_encode, zoo_reference
from models import ZOO_KEYS

GROUPS = ("# pets\nThe cat sleeps on the sofa.\nA kitten naps on the old couch.\n\n"
          "# money\nShares fell sharply today.\nThe market dropped this morning, again.")
BANK = "I sat on the river bank.\nThe bank raised its rates.\nBank staff went on strike."
ATOL = 10 * parity_atol()


def _states(key: str, sentence: str):
    """(encoding, [(T, d) per layer 0..L]): layer L is the model's final output."""
    tok, model = zoo_reference(key)
    with torch.no_grad():
        out = model(**zoo_encode(key, sentence), output_hidden_states=True)
    return tok(sentence, return_tensors="pt"), [h[0] for h in out.hidden_states[:-1]] + [out.last_hidden_state[0]]


def _cosine(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    return unit @ unit.T


@pytest.mark.parametrize("layer", [-1, 1])
@pytest.mark.parametrize("key", ZOO_KEYS)
def test_cls_mean_max_matrices_are_pooled_hidden_states(key, layer):
    _, summary, table, csv = tab.run_similarity(GROUPS, key, layer)
    sentences = [s for s in GROUPS.splitlines() if s.strip() and not s.startswith("#")]
    every = [_states(key, s)[1] for s in sentences]
    states = [layers[layer] for layers in every]
    pooled = {"cls": np.stack([h[0].numpy() for h in states]),
              "mean": np.stack([h.mean(0).numpy() for h in states]),
              "max": np.stack([h.max(0).values.numpy() for h in states])}
    frame = pd.read_csv(csv)
    columns = [str(j + 1) for j in range(len(sentences))]
    for pooling, vectors in pooled.items():
        got = frame[frame["pooling"] == pooling][columns].to_numpy()
        np.testing.assert_allclose(got, _cosine(vectors), atol=ATOL, err_msg=pooling)
    assert len(table) == 3 and "separates the groups better" in summary
    assert f"{len(sentences)} sentences, `{key}`, layer {layer % len(every[0])}." in summary


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_word_across_layers_is_the_mean_of_its_own_pieces(key):
    chart, _, summary = tab.run_word(BANK, "bank", key, -1)
    tok = zoo_reference(key)[0]
    vectors, pieces = [], []
    for sentence in BANK.splitlines():
        start = re.search(r"(?i)\bbank\b", sentence).start()
        enc, states = _states(key, sentence)
        hit = sorted({enc.char_to_token(0, c) for c in range(start, start + 4)} - {None})
        pieces.append(tok.convert_ids_to_tokens(enc["input_ids"][0, hit].tolist()))
        vectors.append(np.stack([h[hit].mean(0).numpy() for h in states]))  # (L + 1, d)
    vectors = np.stack(vectors)  # (N, L + 1, d)
    pairs = [(0, 1), (0, 2), (1, 2)]
    per_layer = [np.mean([_cosine(vectors[:, layer])[a, b] for a, b in pairs]) for layer in range(vectors.shape[1])]
    mean = next(t for t in json.loads(chart.to_json())["data"] if t["name"] == "mean over pairs")
    np.testing.assert_allclose(plotly_array(mean["y"]), per_layer, atol=ATOL)
    assert plotly_array(mean["x"]).tolist() == list(range(vectors.shape[1]))
    # byte-level BPE's space mark "Ġ" shown as fill-mask shows a space, "␣"
    shown = "; ".join(f"{k}: " + " + ".join(f"“**{t.replace('Ġ', '␣')}**”" for t in p)
                      for k, p in enumerate(pieces, start=1))
    assert "Ġ" not in summary
    assert f"Pieces averaged per sentence: {shown}." in summary
