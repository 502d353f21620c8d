"""Retrieval: exact search against numpy brute force, the HNSW index's recall against exact
search, the on-disk cache, the progress callback. On a 300-sentence slice of the corpus."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel

from helpers import ENCODER_KEY, MLM_KEY, REPO, passage_slice
from models import InputError, UnknownModelError, embed, get_spec, search, sentence_groups
from models.registry import catalogue
from models.runtime import loading
from models.runtime.loading import clear_cache
from models.embeddings import retrieval

SLICE = 300


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("retrieval")
    sentences, sources, patch = passage_slice(folder, lambda i, _: i < SLICE)  # the held-out split's first lines
    steps = []
    retrieval.build_index(ENCODER_KEY, "mean", progress=lambda done, total, what: steps.append((done, total)))
    yield sentences, sources, folder, steps
    patch.undo()


def test_exact_search_is_brute_force_cosine(small_corpus):
    sentences, sources, _, _ = small_corpus
    query = "The whale dived under the ship."
    result = search(ENCODER_KEY, query, k=5, pooling="mean", index="exact")
    vectors = embed(ENCODER_KEY, sentences, pooling="mean")
    scores = vectors @ embed(ENCODER_KEY, [query], pooling="mean")[0]
    best = np.argsort(-scores)[:5]
    assert [h.corpus_index for h in result.hits] == best.tolist()
    np.testing.assert_allclose([h.score for h in result.hits], scores[best], atol=1e-5)
    assert [h.source for h in result.hits] == [sources[i] for i in best]
    assert [h.text for h in result.hits] == [sentences[i] for i in best]
    assert result.corpus_size == SLICE


def test_ann_recall_against_exact_search(small_corpus):
    vectors, exact, ann = retrieval._indexes(get_spec(ENCODER_KEY), "mean")
    queries = embed(ENCODER_KEY, (REPO / "data/train_sample.txt").read_text().splitlines()[:50], pooling="mean")
    _, exact_ids = exact.search(queries, 10)
    _, ann_ids = ann.search(queries, 10)
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    assert retrieval.recall_at_k(exact_ids, truth) == 1.0
    assert retrieval.recall_at_k(ann_ids, exact_ids) >= 0.9


def test_recall_at_k_counts_shared_ids():
    assert retrieval.recall_at_k(np.array([[1, 2, 3, 4]]), np.array([[4, 3, 9, 8]])) == 0.5


def test_indexes_are_cached_on_disk_and_progress_is_reported(small_corpus, monkeypatch):
    _, _, folder, steps = small_corpus
    files = sorted(p.name for p in (folder / "cache").iterdir())
    # the first build writes [CLS]'s too (one pass over the corpus gives both): what the report compares
    suffixes = (".exact.faiss", ".hnsw.faiss", ".npy", ".raw.npy")
    stem = f"{retrieval.corpus()[2]}-{retrieval._weights_stamp(get_spec(ENCODER_KEY))}"
    assert len(files) == 8 and {f"{ENCODER_KEY}-{p}-{stem}{s}" for p in ("cls", "mean")
                                for s in suffixes} == set(files)
    assert steps[0] == (0, SLICE) and steps[-1] == (SLICE, SLICE)
    assert [d for d, _ in steps] == sorted(d for d, _ in steps)
    first = search(ENCODER_KEY, "A letter from my sister.", k=3, index="ann")
    monkeypatch.setattr(retrieval, "_LOADED", {})
    monkeypatch.setattr(retrieval, "_vectors", lambda *a, **k: pytest.fail("rebuilt instead of read from disk"))
    again = search(ENCODER_KEY, "A letter from my sister.", k=3, index="ann")
    assert again.hits == first.hits


def test_cached_vectors_are_embeds_and_the_report_makes_no_second_pass_over_the_corpus(small_corpus, monkeypatch):
    sentences, _, _, _ = small_corpus
    retrieval.build_index(ENCODER_KEY, "mean")
    monkeypatch.setattr(retrieval, "_vectors", lambda *a, **k: pytest.fail("a second pass over the corpus"))
    report = retrieval.retrieval_report(ENCODER_KEY, k=3, pooling="mean", queries=10)
    assert set(report.pooling_recall) == {"cls", "mean"}
    for pooling in ("cls", "mean"):
        unit, _, _ = retrieval._indexes(get_spec(ENCODER_KEY), pooling)
        np.testing.assert_allclose(unit, embed(ENCODER_KEY, sentences, pooling=pooling), atol=1e-6)
        np.testing.assert_allclose(retrieval._raw(get_spec(ENCODER_KEY), pooling),
                                   embed(ENCODER_KEY, sentences, pooling=pooling, normalize=False), rtol=1e-5, atol=1e-5)


def test_a_dropped_trained_encoders_indexes_are_let_go_at_the_next_build(small_corpus, monkeypatch):
    # two models "trained in this process" (the catalogue's transient specs, as sentence encoders
    # are), searched; the first then dropped (as the memory budget drops one): the next
    # build frees its indexes, and a search by its key is refused by the catalogue's message
    from dataclasses import replace

    from models.registry import catalogue

    first, second = (replace(catalogue.get_spec(ENCODER_KEY), key=f"test-leak:{n}") for n in (1, 2))
    try:
        catalogue.register_transient(first)
        hits = search(first.key, "A letter from my sister.", k=3, pooling="mean").hits
        assert hits == search(ENCODER_KEY, "A letter from my sister.", k=3, pooling="mean").hits  # same weights
        held = {k for k in retrieval._LOADED if k[0] == first.key}
        assert {k[1] for k in held} == {"cls", "mean"} and held <= set(retrieval._RAW)
        catalogue.forget_transient(first.key)
        catalogue.register_transient(second)
        search(second.key, "A letter from my sister.", k=3, pooling="cls")
        assert not any(k[0] == first.key for k in (*retrieval._LOADED, *retrieval._RAW))
        assert {k[1] for k in retrieval._LOADED if k[0] == second.key} == {"cls", "mean"}
        with pytest.raises(UnknownModelError, match="test-leak:1"):
            search(first.key, "A letter from my sister.", k=3)
    finally:
        for spec in (first, second):  # (the indexes go with the module fixture's _LOADED and _RAW)
            catalogue.forget_transient(spec.key)


def test_a_query_longer_than_the_model_reads_is_named_as_the_query(monkeypatch):
    # refused before any index is built or read, in words about the query (not "Sentence 1")
    monkeypatch.setattr(retrieval, "_indexes", lambda *a, **k: pytest.fail("index work before the check"))
    with pytest.raises(InputError, match=r"^The query is \d+ tokens long; .* reads at most 512 tokens"):
        search(ENCODER_KEY, "whale " * 600, k=3)


@pytest.mark.parametrize("kwargs, match", [({"k": 0}, "k must"), ({"index": "lsh"}, "Unknown index"),
                                           ({"pooling": "sum"}, "pooling"), ({"query": "  "}, "query")])
def test_bad_search_arguments(kwargs, match):
    args = {"model_key": ENCODER_KEY, "query": "Hello.", "k": 5} | kwargs
    with pytest.raises(InputError, match=match):
        search(**args)


# --- retrieval_report's dot-vs-cosine and pooling parts, against numpy brute force ---------------

REPORT_QUERIES = 20


def _query_texts() -> list[str]:
    return (REPO / "data/train_sample.txt").read_text(encoding="utf-8").splitlines()[:REPORT_QUERIES]


def test_report_dot_product_against_cosine_and_norms_by_brute_force(small_corpus):
    sentences, _, _, _ = small_corpus
    report = retrieval.retrieval_report(ENCODER_KEY, k=5, pooling="mean", queries=REPORT_QUERIES)
    raw = embed(ENCODER_KEY, sentences, pooling="mean", normalize=False)  # (N, d), lengths kept
    raw_q = embed(ENCODER_KEY, _query_texts(), pooling="mean", normalize=False)  # (Q, d)
    norms = np.linalg.norm(raw, axis=1)
    cosine = (raw_q / np.linalg.norm(raw_q, axis=1, keepdims=True)) @ (raw / norms[:, None]).T  # (Q, N)
    dot = raw_q @ raw.T
    shared = [len(set(np.argsort(-c)[:5]) & set(np.argsort(-d)[:5])) / 5 for c, d in zip(cosine, dot)]
    assert report.dot_overlap == pytest.approx(np.mean(shared))
    assert report.dot_overlap < 1.0  # lengths differ here, so the dot product reorders the hits
    assert report.norm_spread == pytest.approx((norms.min(), np.median(norms), norms.max()), rel=1e-5)
    assert (report.corpus_size, report.queries, report.k) == (SLICE, REPORT_QUERIES, 5)


def _paraphrase_recall_reference(pooling: str, k: int, sentences) -> tuple[float, int]:
    """Each grouped sentence as a query: a hit when fewer than k candidates (the other grouped
    sentences and the corpus slice) score above its best same-group sentence."""
    texts, group_of = [], []
    for name, sentence_set in sentence_groups().items():
        for number, group in enumerate(sentence_set["groups"]):
            texts += group["sentences"]
            group_of += [(name, number)] * len(group["sentences"])
    own = embed(ENCODER_KEY, texts, pooling=pooling)
    corpus_vectors = embed(ENCODER_KEY, sentences, pooling=pooling)
    hits = 0
    for i in range(len(texts)):
        others = [j for j in range(len(texts)) if j != i]
        scores = np.concatenate([own[others] @ own[i], corpus_vectors @ own[i]])
        best_same = max(float(own[j] @ own[i]) for j in others if group_of[j] == group_of[i])
        hits += int((scores > best_same).sum() < k)
    return hits / len(texts), len(texts)


def test_report_pooling_recall_by_brute_force(small_corpus):
    sentences, _, _, _ = small_corpus
    report = retrieval.retrieval_report(ENCODER_KEY, k=3, pooling="mean", queries=10)
    assert set(report.pooling_recall) == {"cls", "mean"}
    for pooling in ("cls", "mean"):
        expected, n = _paraphrase_recall_reference(pooling, 3, sentences)
        assert report.pooling_queries == n
        # float noise between batchings may move one borderline query, no more
        assert report.pooling_recall[pooling] == pytest.approx(expected, abs=1 / n + 1e-9), pooling


def test_report_ann_recall_against_faiss_exact_search(small_corpus, monkeypatch):
    """The report's ANN recall@k is the share of faiss's exact top k (IndexFlatIP over the
    corpus's vectors, built here) that the public ANN search finds for each query. efSearch is
    lowered so the graph search misses some and the figure is not 1 by construction."""
    import faiss

    sentences, _, _, _ = small_corpus
    monkeypatch.setattr(retrieval, "HNSW_EF_SEARCH", 2)
    monkeypatch.setattr(retrieval, "_LOADED", {})  # read again from the disk cache with efSearch 2
    k = 10
    report = retrieval.retrieval_report(ENCODER_KEY, k=k, pooling="mean", queries=REPORT_QUERIES)
    vectors = embed(ENCODER_KEY, sentences, pooling="mean")
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    queries = _query_texts()
    _, truth = exact.search(embed(ENCODER_KEY, queries, pooling="mean"), k)
    found = [{h.corpus_index for h in search(ENCODER_KEY, q, k=k, pooling="mean", index="ann").hits} for q in queries]
    expected = np.mean([len(f & set(t)) / k for f, t in zip(found, truth)])
    assert expected < 1.0  # the lowered efSearch lost some neighbours, else this tests nothing
    # float noise between a batch and one query at a time may move one borderline neighbour
    assert report.ann_recall == pytest.approx(expected, abs=1 / (k * len(queries)) + 1e-9)


def test_a_model_trained_again_is_searched_with_its_new_vectors_after_a_restart(small_corpus, monkeypatch, tmp_path):
    """The indexes on disk were the old weights': read back after the model's folder was written
    again, they ranked the corpus by vectors the model no longer makes."""
    sentences, _, _, _ = small_corpus
    spec = get_spec(MLM_KEY)  # a model of the models folder (ENCODER_LAB_MODELS_DIR): a copy of it here
    shutil.copytree(catalogue.local_path(spec), tmp_path / spec.source)
    monkeypatch.setenv("ENCODER_LAB_MODELS_DIR", str(tmp_path))
    # the copy's models in caches of their own: the ones other tests hold stay the ones served after
    monkeypatch.setattr(loading, "MODEL_CACHE", loading.ModelCache(loading.MODEL_CACHE.budget_bytes))
    monkeypatch.setattr(loading, "_tokenizers", {})
    query = "The whale dived under the ship."
    clear_cache()
    search(MLM_KEY, query, k=5)  # its vectors and indexes written to disk
    model = AutoModel.from_pretrained(tmp_path / spec.source)  # trained again: other weights, same files
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.05)
    model.save_pretrained(tmp_path / spec.source)
    clear_cache()  # the server restarts: nothing in memory
    monkeypatch.setattr(retrieval, "_LOADED", {})
    monkeypatch.setattr(retrieval, "_RAW", {})
    result = search(MLM_KEY, query, k=5)
    scores = embed(MLM_KEY, sentences) @ embed(MLM_KEY, [query])[0]
    best = np.argsort(-scores)[:5]
    clear_cache()
    assert [h.corpus_index for h in result.hits] == best.tolist()
    np.testing.assert_allclose([h.score for h in result.hits], scores[best], atol=1e-5)
