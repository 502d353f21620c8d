"""NSP's same-source pairs: A and B runs of whole sentences, half of them one sentence each; a
negative's B as many whole sentences of another training chunk of the same source, so that
neither where B stops nor how long the pair is tells the labels apart.

Checked on chunks built here whose every sentence is a run of one distinct id, so a B can be
traced back to the chunk and sentences it came from."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from models.zoo.data import Examples, is_pair_eval_chunk, whole_sentences

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


def split_ab(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    seps = np.flatnonzero(ids == TOKENIZER.sep_token_id)
    return ids[1 : seps[0]], ids[seps[0] + 1 : seps[1]]


def runs_of(part: np.ndarray) -> list[int]:
    """One id per sentence, in order."""
    return [int(v) for v in part[np.r_[True, part[1:] != part[:-1]]]]


def test_a_and_b_are_whole_neighbouring_sentences_and_a_negative_b_comes_from_the_same_source():
    chunks, sources, where = corpus()
    ex = Examples(TOKENIZER, chunks, 128, 0, sources=sources, nsp_negatives="same-source")
    rng = np.random.default_rng(0)
    negatives = short = 0
    for i in ex.train_idx * 3:
        ids, types, label = ex.pair(i, rng, "nsp")
        a, b = split_ab(ids)
        a_runs, b_runs = runs_of(a), runs_of(b)
        assert {where[k][0] for k in a_runs} == {i}
        a_at = [where[k][1] for k in a_runs]
        assert a_at == list(range(a_at[0], a_at[-1] + 1))  # consecutive sentences of chunk i
        short += len(a_runs) == len(b_runs) == 1
        for part, found in ((a, a_runs), (b, b_runs)):  # each sentence whole
            assert all((part == k).sum() == len(chunks[where[k][0]][where[k][1]]) for k in found)
        b_at = [where[k][1] for k in b_runs]
        assert b_at == list(range(b_at[0], b_at[-1] + 1))
        if not label:
            assert {where[k][0] for k in b_runs} == {i} and b_at[0] == a_at[-1] + 1  # A's next sentences
            continue
        negatives += 1
        (other,) = {where[k][0] for k in b_runs}
        assert other != i and sources[other] == sources[i] and not is_pair_eval_chunk(other)
    n = 3 * len(ex.train_idx)
    assert 0.4 < negatives / n < 0.6
    assert short / n > 0.45  # SHORT_PAIRS = 0.5 of one sentence each, and some longer draws of one each


def test_positive_and_negative_pairs_are_alike_in_length_and_sentence_count():
    """What a head could read without the story: a pair's length and its B's sentence count."""
    chunks, sources, _ = corpus(400)
    ex = Examples(TOKENIZER, chunks, 128, 0, sources=sources, nsp_negatives="same-source")
    rng = np.random.default_rng(3)
    lengths, counts = {0: [], 1: []}, {0: [], 1: []}
    for i in ex.train_idx * 6:
        ids, _, label = ex.pair(i, rng, "nsp")
        lengths[label].append(len(ids))
        counts[label].append(len(runs_of(split_ab(ids)[1])))
    assert abs(np.mean(lengths[0]) - np.mean(lengths[1])) < 0.05 * np.mean(lengths[0])
    # a negative's B can have fewer sentences only when the other chunk has fewer (2-5 here)
    assert 0 <= np.mean(counts[0]) - np.mean(counts[1]) < 0.1 * np.mean(counts[0])


def test_whole_sentences_takes_as_many_as_asked_and_drops_the_last_ones_past_room():
    chunk = [np.full(n, k, dtype=np.int64) for k, n in enumerate((4, 6, 5, 7), start=10)]
    for seed in range(20):
        taken = whole_sentences(chunk, 2, 100, np.random.default_rng(seed))
        assert len(taken) == 2 and int(taken[1][0]) == int(taken[0][0]) + 1
    assert len(whole_sentences(chunk, 9, 100, np.random.default_rng(0))) == 4  # the whole chunk
    assert [len(x) for x in whole_sentences(chunk, 4, 10, np.random.default_rng(0))] == [4, 6]
    assert [len(x) for x in whole_sentences(chunk, 4, 1, np.random.default_rng(0))] == [4]  # one kept


def test_the_choice_of_negatives_is_checked():
    chunks, sources, _ = corpus(60)
    with pytest.raises(ValueError, match="nsp_negatives"):
        Examples(TOKENIZER, chunks, 128, 0, sources=sources, nsp_negatives="other")
    with pytest.raises(ValueError, match="source"):
        Examples(TOKENIZER, chunks, 128, 0, nsp_negatives="same-source")
