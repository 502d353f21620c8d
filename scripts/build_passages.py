"""Write the search's passage index, ``data/passages.txt`` and ``data/passages_sources.txt`` (committed).

The passages are lines of the corpus (``scripts/build_corpus.py``), one sentence a line:

* first, the held-out split ``data/heldout.txt`` as it is (its line numbers keep their meaning),
  with its sources from ``data/tasks/heldout_sources.txt``;
* then every sentence, training or held-out split, of the corpus's knowledge sources:
  ``facts-templated`` (country, city and element records), ``facts-written``, ``elements``
  and the dictionary sentences of ``wordnet-def`` ("A dog is a member of ..."), in the
  corpus builder's order, found by running its extractors again on the cached packages
  (``.cache/corpus/debs``; nothing is downloaded when they are there) and kept only where
  the built corpus holds the sentence.

GCIDE's 21,000 dictionary sentences are left out: they would more than double the index
that every sentence encoder embeds on its first search.

Usage: python -m scripts.build_passages [--corpus .cache/corpus]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from scripts.build_tasks import REPO, _corpus_builder

KNOWLEDGE = ("wordnet-def", "elements", "facts-templated", "facts-written")
PASSAGES = REPO / "data" / "passages.txt"
SOURCES = REPO / "data" / "passages_sources.txt"


def knowledge_sentences(corpus: Path) -> list[tuple[str, str]]:
    """(source, sentence) of the knowledge sources that the built corpus holds, first source wins."""
    builder = _corpus_builder()
    held = set()
    for part in ("train.txt", "heldout.txt"):
        held |= {builder.norm(s) for s in (corpus / part).read_text(encoding="utf-8").splitlines()}
    out, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:  # unpacked here, never inside the shared corpus folder
        (Path(tmp) / "debs").symlink_to((corpus / "debs").resolve())
        fetcher = builder.Fetcher(Path(tmp))
        for name, _, extract in builder.SOURCES:
            if name not in KNOWLEDGE:
                continue
            for s in extract(fetcher)[2]:
                key = builder.norm(s)
                if key in held and key not in seen:
                    seen.add(key)
                    out.append((name, s))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    args = parser.parse_args(argv)
    builder = _corpus_builder()
    heldout = (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines()
    sources = (REPO / "data" / "tasks" / "heldout_sources.txt").read_text(encoding="utf-8").splitlines()
    seen = {builder.norm(s) for s in heldout}
    rows = list(zip(sources, heldout))
    rows += [(name, s) for name, s in knowledge_sentences(args.corpus) if builder.norm(s) not in seen]
    PASSAGES.write_text("".join(s + "\n" for _, s in rows), encoding="utf-8")
    SOURCES.write_text("".join(name + "\n" for name, _ in rows), encoding="utf-8")
    counts: dict[str, int] = {}
    for name, _ in rows[len(heldout):]:
        counts[name] = counts.get(name, 0) + 1
    print(f"{len(rows):,} passages: held-out split {len(heldout):,}, " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
