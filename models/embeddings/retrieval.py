"""Search by meaning: sentence vectors in a FAISS index, exact or approximate.

The searchable corpus is the project's committed passage index, ``data/passages.txt``
(18,445 corpus lines, ``scripts/build_passages.py``): the held-out split ``data/heldout.txt``
(3,191 sentences from the corpus's twelve older sources, ``data/corpus_sources.json``) followed
by the corpus's knowledge sources (templated country, city and element facts, the written
facts, the elements' descriptions and WordNet's definitions as sentences), so the index
builds anywhere the repository is. Vectors come from ``models.embed`` (the
Embeddings tab's pooling), L2-normalised, so an inner product is a cosine:

* ``index="exact"``: ``faiss.IndexFlatIP``, every vector compared (brute force);
* ``index="ann"``: ``faiss.IndexHNSWFlat`` (a navigable small-world graph, M = 32,
  efSearch = 64), approximate nearest neighbours.

Vectors (unit and unnormalised) and both indexes are cached on disk under
``.cache/retrieval/``, named by model, pooling, a hash of the corpus and a stamp of the model's
files (``_weights_stamp``: a model trained again is embedded again); the first search of a
model builds them for its pooling, [CLS] and mean from one pass over the corpus (what
``retrieval_report`` compares), reporting progress through a callback.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import CapabilityError, InputError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import check_token_count, load_model, refuse_decoder
from ..runtime.memory import MEMORY, Entry, tick
from ..validation import check_int, check_text
from .pooling import POOLING, check_pooling, embed, pooled_vectors
from .sentence_sets import sentence_groups

CORPUS_FILE = catalogue.REPO_ROOT / "data" / "passages.txt"
SOURCES_FILE = catalogue.REPO_ROOT / "data" / "passages_sources.txt"  # line by line
QUERIES_FILE = catalogue.REPO_ROOT / "data" / "train_sample.txt"
CACHE_DIR = catalogue.REPO_ROOT / ".cache" / "retrieval"
INDEXES = ("exact", "ann")
MAX_K = 100
HNSW_M = 32
HNSW_EF_SEARCH = 64
HNSW_EF_CONSTRUCTION = 80
EMBED_CHUNK = 256  # sentences per progress step
REPORT_QUERIES = 200  # training-sample sentences used as queries by retrieval_report

Progress = Callable[[int, int, str], None]  # (done, total, what)


@dataclass(frozen=True)
class SearchHit:
    rank: int  # 1 = best
    score: float  # cosine similarity (the vectors are L2-normalised)
    text: str
    source: str  # the corpus source it comes from, or "" where unknown
    corpus_index: int  # line number (0-based) in data/passages.txt


@dataclass(frozen=True)
class SearchResult:
    model_key: str
    query: str
    pooling: str
    index: str  # "exact" or "ann"
    corpus_size: int
    hits: tuple[SearchHit, ...]
    milliseconds: float  # this query's search time, the query's embedding excluded


@dataclass(frozen=True)
class RetrievalReport:
    """How the ANN index compares with exact search, and what pooling and normalising do."""

    model_key: str
    pooling: str
    k: int
    corpus_size: int
    queries: int  # sentences of data/train_sample.txt used as queries
    ann_recall: float  # mean |ANN top-k ∩ exact top-k| / k
    exact_ms: float  # mean time per query (one batch of all queries, divided), milliseconds
    ann_ms: float
    dot_overlap: float  # mean |dot-product top-k ∩ cosine top-k| / k on unnormalised vectors
    norm_spread: tuple[float, float, float]  # min, median, max vector length before normalising
    pooling_recall: dict  # pooling -> recall@k of finding a paraphrase among the distractors
    pooling_queries: int  # paraphrase queries behind pooling_recall
    note: str


# --- corpus ---------------------------------------------------------------------------------


def corpus() -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(sentences, source of each, sha1 of the file): the searchable slice."""
    data = CORPUS_FILE.read_bytes()
    sentences = tuple(data.decode("utf-8").splitlines())
    sources = SOURCES_FILE.read_text(encoding="utf-8").splitlines() if SOURCES_FILE.exists() else []
    if len(sources) != len(sentences):  # written for another version of the corpus: unknown
        sources = [""] * len(sentences)
    return sentences, tuple(sources), hashlib.sha1(data).hexdigest()[:12]


def _faiss():
    try:
        import faiss
    except ImportError:  # pinned in requirements.txt; say what to do when it is missing
        raise CapabilityError("Search needs the faiss-cpu package: pip install -r requirements.txt.") from None
    return faiss


# --- vectors and indexes, cached on disk -------------------------------------------------------

_BUILD_LOCK = threading.Lock()  # one build at a time: two requests never write the same files
_LOADED: dict[tuple, tuple] = {}  # (model, pooling, corpus hash) -> (vectors, exact, ann)
_RAW: dict[tuple, np.ndarray] = {}  # (model, pooling, corpus hash) -> unnormalised vectors
_USED: dict[tuple, int] = {}  # last use of each, for the server's memory budget


class _Indexes:
    """The loaded indexes, as one holder of the server's memory budget (``runtime/memory.py``)."""

    part = "retrieval indexes"

    def entries(self) -> list[Entry]:
        found = [(k, _LOADED.get(k), _RAW.get(k)) for k in list(_LOADED)]
        # the unit vectors, the exact index's copy, the HNSW graph's copy and links, the raw vectors
        return [Entry(_USED.get(k, 0), k, 3 * v[0].nbytes + len(v[0]) * HNSW_M * 8 + getattr(raw, "nbytes", 0))
                for k, v, raw in found if v is not None]

    def drop(self, key: tuple) -> None:
        _LOADED.pop(key, None)
        _RAW.pop(key, None)
        _USED.pop(key, None)


_HOLDER = MEMORY.register(_Indexes())
REPORT_POOLINGS = ("cls", "mean")  # the report's paraphrase comparison; built together


def _vectors(spec: ModelSpec, sentences, poolings: tuple[str, ...], progress: Progress | None) -> dict:
    """{pooling: (N, d) unnormalised float32 vectors}, every pooling from one pass."""
    parts = {p: [] for p in poolings}
    for start in range(0, len(sentences), EMBED_CHUNK):
        if progress:
            progress(start, len(sentences), "embedding the corpus")
        chunk = pooled_vectors(spec, sentences[start:start + EMBED_CHUNK], poolings,
                               truncate=True)  # a corpus sentence longer than the model reads: its first tokens
        for p in poolings:
            parts[p].append(chunk[p])
    return {p: np.ascontiguousarray(np.concatenate(v), dtype=np.float32) for p, v in parts.items()}


def _unit(raw: np.ndarray) -> np.ndarray:
    """L2-normalised rows, as ``embed(normalize=True)`` (torch's F.normalize)."""
    return F.normalize(torch.from_numpy(raw), p=2, dim=1).numpy()


def _build_indexes(vectors: np.ndarray):
    faiss = _faiss()
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    ann = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
    ann.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    ann.add(vectors)
    return exact, ann


def _weights_stamp(spec: ModelSpec) -> str:
    """A digest of the model's files on disk (names, sizes, modification times): vectors kept on
    disk are read back only for the weights they were made with, not after the model is trained
    again or updated (its folder rewritten, a new Hub snapshot)."""
    folder = catalogue.local_path(spec)
    if folder is None:  # a Hub model: its cached snapshot, a folder named by its commit
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(spec.source, "config.json")
        folder = Path(found).parent if isinstance(found, str) else None
    digest = hashlib.sha1(str(folder).encode())
    for path in sorted(folder.rglob("*")) if folder is not None else ():
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:8]


def _files(model_key: str, pooling: str, digest: str, stamp: str) -> list[Path]:
    stem = CACHE_DIR / f"{model_key}-{pooling}-{digest}-{stamp}"
    return [Path(f"{stem}.npy"), Path(f"{stem}.exact.faiss"), Path(f"{stem}.hnsw.faiss"), Path(f"{stem}.raw.npy")]


def _indexes(spec: ModelSpec, pooling: str, progress: Progress | None = None):
    """(unit vectors (N, d), exact index, ann index), from memory, disk, or built now (with the
    unnormalised vectors, and the report's other pooling from the same pass)."""
    model_key = spec.key
    faiss = _faiss()
    sentences, _, digest = corpus()
    key = (model_key, pooling, digest)
    found = _LOADED.get(key)
    if found is not None:
        _USED[key] = tick()
        return found
    with _BUILD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        _forget_gone()
        stamp = _weights_stamp(spec)  # the model's files read once a build
        files = _files(model_key, pooling, digest, stamp)
        transient = catalogue.is_transient(model_key)  # trained in this process: never on disk
        if not transient and all(f.exists() for f in files):
            exact, ann = (faiss.read_index(str(f)) for f in files[1:3])
            _keep(key, np.load(files[0]), exact, ann, np.load(files[3]))
            return _LOADED[key]
        poolings = tuple(dict.fromkeys((pooling, *REPORT_POOLINGS)))
        raws = _vectors(spec, sentences, poolings, progress)
        if progress:
            progress(len(sentences), len(sentences), "building the FAISS indexes")
        for p, raw in raws.items():
            vectors = _unit(raw)
            exact, ann = _build_indexes(vectors)
            if not transient:
                CACHE_DIR.mkdir(parents=True, exist_ok=True)
                unit_file, exact_file, ann_file, raw_file = _files(model_key, p, digest, stamp)
                np.save(unit_file, vectors)
                faiss.write_index(exact, str(exact_file))
                faiss.write_index(ann, str(ann_file))
                np.save(raw_file, raw)
            _keep((model_key, p, digest), vectors, exact, ann, raw)
        return _LOADED[key]


def _forget_gone() -> None:
    """Drop the indexes of models the catalogue has dropped (a sentence encoder trained here
    and pushed out by newer ones: nothing can embed a query for it again), so that a server whose
    visitors train and search many keeps only the live ones' (two poolings, ~20 MB each for a
    384-wide model)."""
    for key in [k for k in _LOADED if not catalogue.is_known(k[0])]:
        _LOADED.pop(key, None)
        _RAW.pop(key, None)


def _keep(key: tuple, vectors: np.ndarray, exact, ann, raw: np.ndarray) -> None:
    ann.hnsw.efSearch = HNSW_EF_SEARCH
    _RAW[key] = raw  # first: a reader that finds the key in _LOADED (read without the lock) finds it here too
    _LOADED[key] = (vectors, exact, ann)
    _USED[key] = tick()
    MEMORY.settle(keep=(_HOLDER, key))


def _raw(spec: ModelSpec, pooling: str) -> np.ndarray:
    """The corpus's unnormalised vectors (kept with the indexes)."""
    _indexes(spec, pooling)
    return _RAW[(spec.key, pooling, corpus()[2])]


# --- public API -------------------------------------------------------------------------------


def _check_k(k) -> int:
    return check_int(k, "k", 1, MAX_K)


def _check_index(index) -> str:
    if index not in INDEXES:
        raise InputError(f"Unknown index {index!r}; choose one of: {', '.join(INDEXES)}.")
    return index


def build_index(model_key: str, pooling: str = "mean", progress: Progress | None = None) -> int:
    """Build (or load) the cached vectors and indexes now; returns the corpus size."""
    spec = catalogue.get_spec(model_key)  # an UnknownModelError before an index is built or read
    refuse_decoder(spec, POOLING)  # a decoder: a CapabilityError
    return len(_indexes(spec, check_pooling(pooling), progress)[0])


def search(model_key: str, query: str, k: int = 10, pooling: str = "mean", index: str = "exact",
           progress: Progress | None = None) -> SearchResult:
    """The k corpus sentences closest to the query (cosine), with score and source.

    k: 1 to 100. pooling: "cls", "mean" or "max" (as ``embed``). index: "exact" (every
    vector compared) or "ann" (the approximate index). progress: None or a callable
    ``progress(done, total, what)`` told how a first build of the model's index advances. The
    first call per model and pooling embeds the corpus (cached after). An unknown model is an
    ``UnknownModelError``; a bad k, pooling or index, or a query over the model's length, an
    ``InputError``."""
    spec = catalogue.get_spec(model_key)  # an UnknownModelError before any index work
    refuse_decoder(spec, POOLING)  # a decoder: a CapabilityError
    query = check_text(query, what="query")
    k, pooling, index = _check_k(k), check_pooling(pooling), _check_index(index)
    loaded = load_model(spec, head="base")  # the query's length, before any index work
    check_token_count(loaded, len(loaded.tokenizer(query)["input_ids"]), "The query")
    size = len(_indexes(spec, pooling, progress)[0])
    q = embed(model_key, [query], pooling=pooling, normalize=True)
    hits, ms = nearest_passages(spec, q, k, pooling, index)
    return SearchResult(model_key, query, pooling, index, size, hits, ms)


def nearest_passages(spec: ModelSpec, unit_query: np.ndarray, k: int, pooling: str = "mean",
                     index: str = "exact") -> tuple[tuple[SearchHit, ...], float]:
    """The k passages nearest a (1, d) L2-normalised query vector, and the index's search time in
    milliseconds: ``search`` below the public layer (the arguments already checked)."""
    vectors, exact, ann = _indexes(spec, pooling)
    started = time.perf_counter()
    scores, ids = (exact if index == "exact" else ann).search(unit_query, k)
    ms = (time.perf_counter() - started) * 1000
    sentences, sources, _ = corpus()
    hits = tuple(
        SearchHit(rank, float(s), sentences[i], sources[i], int(i))
        for rank, (s, i) in enumerate(zip(scores[0], ids[0]), start=1) if i >= 0
    )
    return hits, ms


def _overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Mean share of each row of a found in the same row of b."""
    return float(np.mean([len(set(x) & set(y)) / len(x) for x, y in zip(a, b)]))


def recall_at_k(approx_ids: np.ndarray, exact_ids: np.ndarray) -> float:
    """Mean |approximate top-k ∩ exact top-k| / k over queries (rows)."""
    return _overlap(exact_ids, approx_ids)


def _paraphrase_recall(model_key: str, pooling: str, k: int, distractors: np.ndarray) -> tuple[float, int]:
    """Recall@k of a same-group sentence, each grouped sentence a query, among the distractors."""
    texts, groups = [], []
    for s in sentence_groups().values():
        for number, group in enumerate(s["groups"]):
            texts += group["sentences"]
            groups += [f"{s['name']}/{number}"] * len(group["sentences"])
    own = embed(model_key, texts, pooling=pooling, normalize=True)  # (G, d)
    pool = np.concatenate([own, distractors])  # (G + N, d)
    scores = own @ pool.T  # (G, G + N)
    np.fill_diagonal(scores[:, :len(own)], -np.inf)  # a query never finds itself
    top = np.argsort(-scores, axis=1)[:, :k]
    groups = np.array(groups)
    hits = [any(j < len(own) and groups[j] == groups[i] for j in row) for i, row in enumerate(top)]
    return float(np.mean(hits)), len(own)


def retrieval_report(model_key: str, k: int = 10, pooling: str = "mean", queries: int = REPORT_QUERIES,
                     progress: Progress | None = None) -> RetrievalReport:
    """Recall@k of the ANN index against exact search and each one's latency; cosine vs dot
    product on unnormalised vectors; [CLS] vs mean pooling as paraphrase-search quality.

    k: 1 to 100; pooling: as ``search``; queries: how many training-sample sentences are the
    queries, 10 to 2000; progress: as ``search``. Out of range: an ``InputError``."""
    spec = catalogue.get_spec(model_key)  # an UnknownModelError before an index is built or read
    k, pooling = _check_k(k), check_pooling(pooling)
    queries = check_int(queries, "queries", 10, 2000)
    vectors, exact, ann = _indexes(spec, pooling, progress)
    query_texts = QUERIES_FILE.read_text(encoding="utf-8").splitlines()[:queries]
    raw_q = embed(model_key, query_texts, pooling=pooling, normalize=False, truncate=True)
    q = _unit(raw_q)
    started = time.perf_counter()
    _, exact_ids = exact.search(q, k)
    exact_ms = (time.perf_counter() - started) * 1000 / len(q)
    started = time.perf_counter()
    _, ann_ids = ann.search(q, k)
    ann_ms = (time.perf_counter() - started) * 1000 / len(q)
    # Unnormalised: the dot product favours long vectors, the cosine does not.
    raw = _raw(spec, pooling)
    dot_ids = np.argsort(-(raw_q @ raw.T), axis=1)[:, :k]
    norms = np.linalg.norm(raw, axis=1)
    pooling_recall, n_para = {}, 0
    for p in REPORT_POOLINGS:
        distractors = vectors if p == pooling else _indexes(spec, p, progress)[0]
        pooling_recall[p], n_para = _paraphrase_recall(model_key, p, k, distractors)
    return RetrievalReport(
        model_key=model_key, pooling=pooling, k=k, corpus_size=len(vectors), queries=len(q),
        ann_recall=recall_at_k(ann_ids, exact_ids), exact_ms=exact_ms, ann_ms=ann_ms,
        dot_overlap=_overlap(exact_ids, dot_ids),
        norm_spread=(float(norms.min()), float(np.median(norms)), float(norms.max())),
        pooling_recall=pooling_recall, pooling_queries=n_para,
        note=(f"Corpus: data/passages.txt ({len(vectors):,} passages: the held-out split and the knowledge sources). Queries: the first {len(q)} "
              f"sentences of data/train_sample.txt. HNSW M={HNSW_M}, efSearch={HNSW_EF_SEARCH}. "
              "Paraphrase recall: each sentence of the Embeddings tab's groups as a query, a hit when "
              f"a sentence of its own group is in the top {k} among the groups and the whole corpus."),
    )
