"""NSP's same-source negatives: a negative's B is whole sentences of another training chunk of
the same source, as many as fit the positive B's length, so that both kinds of B end a sentence.

Checked on chunks built here whose every sentence is a run of one distinct id, so a B can be
traced back to the chunk and sentences it came from."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from models.zoo.data import Examples, is_pair_eval_chunk

TOKENIZER = SimpleNamespace(cls_token_id=1, sep_token_id=2, pad_token_id=0)


def corpus(n_chunks: int = 120):
    """Chunks of 2-5 sentences, each sentence ``[k] * length`` with its own k (k >= 10);
    sources alternate between three names in runs of ten chunks."""
    rng = np.random.default_rng(7)
    chunks, sources, where = [], [], {}
    k = 10
    for c in range(n_chunks):
        chunk = []
        for s in range(int(rng.integers(2, 6))):
            chunk.append(np.full(int(rng.integers(3, 12)), k, dtype=np.int64))
            where[k] = (c, s)
            k += 1
        chunks.append(chunk)
        sources.append(("austen", "fortunes", "sotu")[(c // 10) % 3])
    return chunks, sources, where


def split_b(ids: np.ndarray) -> np.ndarray:
    seps = np.flatnonzero(ids == TOKENIZER.sep_token_id)
    return ids[seps[0] + 1 : seps[1]]


def test_a_negative_b_is_whole_sentences_of_another_chunk_of_the_same_source():
    chunks, sources, where = corpus()
    ex = Examples(TOKENIZER, chunks, 128, 0, sources=sources, nsp_negatives="same-source")
    rng = np.random.default_rng(0)
    negatives = 0
    for i in ex.train_idx * 3:
        ids, types, label = ex.pair(i, rng, "nsp")
        b = split_b(ids)
        runs = [int(v) for v in b[np.r_[True, b[1:] != b[:-1]]]]  # one id per sentence, in order
        if not label:
            assert [where[k][0] for k in runs] == [i] * len(runs)  # the positive: chunk i's own rest
            continue
        negatives += 1
        (other,) = {where[k][0] for k in runs}
        assert other != i and sources[other] == sources[i] and not is_pair_eval_chunk(other)
        first, last = where[runs[0]][1], where[runs[-1]][1]
        assert [where[k][1] for k in runs] == list(range(first, last + 1))  # consecutive sentences
        for k in runs:  # each sentence whole
            assert (b == k).sum() == len(chunks[other][where[k][1]])
    assert 0.4 < negatives / (3 * len(ex.train_idx)) < 0.6


def test_a_negative_b_fits_the_positive_length_unless_its_one_sentence_is_longer():
    chunks, sources, _ = corpus()
    ex = Examples(TOKENIZER, chunks, 128, 0, sources=sources, nsp_negatives="same-source")
    rng = np.random.default_rng(1)
    for i in ex.train_idx:
        for length in (1, 5, 15, 40):
            b = ex.same_source_b(i, rng, length)
            assert len(b) <= length or len(set(b.tolist())) == 1  # one sentence at least, whole


def test_the_choice_of_negatives_is_checked():
    chunks, sources, _ = corpus(60)
    with pytest.raises(ValueError, match="nsp_negatives"):
        Examples(TOKENIZER, chunks, 128, 0, sources=sources, nsp_negatives="other")
    with pytest.raises(ValueError, match="source"):
        Examples(TOKENIZER, chunks, 128, 0, nsp_negatives="same-source")
