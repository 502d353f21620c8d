"""Train the static word vectors of the "Before BERT" lesson: word2vec on the corpus's training split.

One vector per word, whatever its sentence: gensim's ``Word2Vec`` (skip-gram, negative
sampling) over ``.cache/corpus/train.txt`` (``python -m scripts.build_corpus``), each line
tokenised by gensim's own ``simple_preprocess`` (lower case, words of 2-15 letters). The
vocabulary is capped at the most frequent ``--vocabulary`` words (gensim's
``max_final_vocab``), so the shipped file stays small. Output (``weights/word2vec/``):

* ``vectors.npz``: ``words`` (unicode array, most frequent first) and ``vectors``
  (float16, one row per word), read by ``models.embeddings.static_words`` with numpy alone;
* ``record.json``: the settings, the corpus's size and hash, the library versions, the
  machine's load and the wall and CPU time;
* ``MODEL_CARD.md``: the same, for a person.

gensim is a build-time package: ``pip install -r requirements-data.txt``.
Usage (minutes on two cores): nice -n 19 python -m scripts.train_static_vectors
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / ".cache" / "corpus" / "train.txt"
OUT = REPO / "weights" / "word2vec"
SETTINGS = {  # gensim Word2Vec's arguments, each as its own name
    "sg": 1,  # skip-gram: predict the words around each word
    "vector_size": 100,
    "window": 5,  # words on each side
    "negative": 5,  # negative samples per positive pair
    "min_count": 5,
    "sample": 1e-3,  # down-sampling of frequent words
    "epochs": 10,
    "seed": 0,
    "workers": 2,
}
SHOWN_WORDS = ("bank", "plant", "cell")  # neighbours written into the card


def tokenised_copy(corpus: Path, out: Path) -> tuple[int, int]:
    """``corpus`` one line per sentence -> ``out`` as gensim's corpus_file reads it (tokens split
    by spaces); returns (sentences, tokens)."""
    from gensim.utils import simple_preprocess

    sentences = tokens = 0
    with open(corpus, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for line in src:
            words = simple_preprocess(line)
            if words:
                dst.write(" ".join(words) + "\n")
                sentences += 1
                tokens += len(words)
    return sentences, tokens


class LoadSampler:
    """The 1-minute load average every 10 s while training runs (the machine is shared)."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(10):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self):
        self.samples.append(os.getloadavg()[0])
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def train(corpus_file: Path, vocabulary: int, settings: dict):
    from gensim.models import Word2Vec

    return Word2Vec(corpus_file=str(corpus_file), max_final_vocab=vocabulary, **settings)


def save_vectors(model, out: Path) -> Path:
    words = np.array(model.wv.index_to_key, dtype=str)  # most frequent first
    path = out / "vectors.npz"
    np.savez_compressed(path, words=words, vectors=model.wv.vectors.astype(np.float16))
    return path


def card(record: dict) -> str:
    s, c = record["settings"], record["corpus"]
    neighbours = "\n".join(f"- **{w}**: " + ", ".join(f"{n} {v:.2f}" for n, v in near)
                           for w, near in record["neighbours"].items())
    loads = record["load_average"]
    return f"""# `word2vec`: static word vectors trained by Encoder Lab

**What it is.** One {s['vector_size']}-dimensional vector per word, the same whatever the sentence:
gensim's `Word2Vec` (skip-gram with negative sampling), trained **from random initialisation**
by this project for the Lessons' "Before BERT" step. {record['words']:,} words (the most
frequent of the corpus), float16 rows in `vectors.npz` ({record['file_bytes'] / 2**20:.1f} MiB),
read with numpy alone (`models/embeddings/static_words.py`).

**On what.** The corpus's training split, `.cache/corpus/train.txt` (`python -m scripts.build_corpus`;
sources and licences in `data/corpus_sources.json`): {c['sentences']:,} sentences, {c['tokens']:,}
tokens after gensim's `simple_preprocess` (lower case, words of 2-15 letters; sha256 of the file
`{c['sha256'][:12]}`). The held-out split was never read.

**How.** `nice -n 19 python -m scripts.train_static_vectors`: gensim {record['gensim']} (numpy
{record['numpy']}), skip-gram, window {s['window']}, {s['negative']} negative samples, minimum count
{s['min_count']}, down-sampling {s['sample']:g}, {s['epochs']} epochs, seed {s['seed']}, {s['workers']}
worker threads (gensim's threads make a run not bit-for-bit repeatable), vocabulary capped at
{record['vocabulary_cap']:,} words (`max_final_vocab`). {record['wall_seconds'] / 60:.1f} wall minutes,
{record['cpu_seconds'] / 60:.1f} CPU minutes, on this machine's CPU ({os.cpu_count()} cores, shared with other
work: 1-minute load average while it trained, median {np.median(loads):.1f}, range {min(loads):.1f}-{max(loads):.1f}).

**Nearest neighbours** (cosine) of the lesson's words:
{neighbours}

**Licence.** The vectors are released under the project's terms; the corpus texts are public
domain or permissively licensed (`data/corpus_sources.json`).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--vocabulary", type=int, default=16_000, help="words kept, most frequent first")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    started, cpu = time.time(), time.process_time()
    with tempfile.TemporaryDirectory() as scratch, LoadSampler() as load:
        tokenised = Path(scratch) / "train.tok"
        sentences, tokens = tokenised_copy(args.corpus, tokenised)
        model = train(tokenised, args.vocabulary, SETTINGS)
    path = save_vectors(model, args.out)
    record = {
        "settings": SETTINGS, "vocabulary_cap": args.vocabulary, "words": len(model.wv),
        "corpus": {"path": str(args.corpus.relative_to(REPO)) if args.corpus.is_relative_to(REPO) else str(args.corpus),
                   "sentences": sentences, "tokens": tokens,
                   "sha256": hashlib.sha256(args.corpus.read_bytes()).hexdigest()},
        "gensim": metadata.version("gensim"), "numpy": np.__version__, "python": platform.python_version(),
        "wall_seconds": round(time.time() - started, 1), "cpu_seconds": round(time.process_time() - cpu, 1),
        "load_average": [round(x, 2) for x in load.samples], "file_bytes": path.stat().st_size,
        "neighbours": {w: [(n, round(float(v), 3)) for n, v in model.wv.most_similar(w, topn=8)]
                       for w in SHOWN_WORDS if w in model.wv},
    }
    (args.out / "record.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (args.out / "MODEL_CARD.md").write_text(card(record), encoding="utf-8")
    print(f"{record['words']:,} words, {record['file_bytes'] / 2**20:.1f} MiB, {record['wall_seconds']:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
