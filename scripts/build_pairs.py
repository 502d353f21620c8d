"""Write the sentence-encoder and sentence-pair data into ``data/tasks/`` (committed).

Every label comes from WordNet 3.0's structure (Debian's ``wordnet-base``, fetched with
``apt-get download`` and unpacked, never installed), never from a model:

* ``synsets.tsv``  ``split<TAB>group<TAB>sentence``: the usage examples WordNet quotes in a
                   noun or verb synset's gloss ("the bank raised its rates"), grouped by
                   synset. Two examples of one synset are a positive pair (the same sense);
                   an example of *another* synset of the same word is a hard negative (same
                   word, other sense). Only synsets with two or more examples are kept. The
                   group is ``<word>.<pos>.<offset>``.
* ``definition-match.tsv`` ``split<TAB>label<TAB>word<TAB>definition``: "does the definition
                   match the word?"; ``match``: the gloss of one of the word's own senses,
                   ``other``: the gloss of another word's sense (drawn in a fixed hash order).

The split is by **word** (a synset's first lemma): ``validation`` when
``sha1("pairs:" + word) % 100 < 30``. No validation synset or word is ever trained on.

Usage: python -m scripts.build_pairs [--corpus .cache/corpus] [--out data/tasks]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from scripts import build_corpus

REPO = Path(__file__).resolve().parents[1]
VALIDATION_PERCENT = 30
MAX_GROUPS = {"train": 3000, "validation": 300}  # synsets kept per split (hash order)
MAX_DEFINITIONS = {"train": 3000, "validation": 600}  # word/definition pairs per split


def _hash(text: str, salt: str) -> int:
    return int.from_bytes(hashlib.sha1((salt + text).encode()).digest()[:8], "big")


def split_of(word: str) -> str:
    return "validation" if _hash(word.lower(), "pairs:") % 100 < VALIDATION_PERCENT else "train"


def wordnet_synsets(root: Path):
    """(pos, offset, first lemma, definition, [examples]) of every noun and verb synset."""
    for pos in ("noun", "verb"):
        for line in open(root / f"usr/share/wordnet/data.{pos}", encoding="latin-1"):
            if line.startswith(" ") or " | " not in line:
                continue
            head, gloss = line.split(" | ", 1)
            fields = head.split()
            lemma = fields[4].replace("_", " ")
            lemma = re.sub(r"\([a-z]+\)$", "", lemma)  # adjective markers such as (a)
            examples = [build_corpus.as_sentence(e) for e in re.findall(r'"([^"]+)"', gloss)]
            definition = build_corpus.clean(gloss.split(";")[0].strip().strip('"'))
            yield pos, fields[0], lemma, definition, [e for e in examples if build_corpus.accept(e)]


def synset_rows(synsets) -> list[tuple[str, str, str]]:
    quoted = Counter(e for s in synsets for e in set(s[4]))  # an example quoted by two synsets: dropped
    synsets = [s[:4] + ([e for e in s[4] if quoted[e] == 1],) for s in synsets]
    groups = [s for s in synsets if len(s[4]) >= 2 and s[2].replace(" ", "").isalpha()]
    groups.sort(key=lambda s: _hash(f"{s[0]}{s[1]}", "order:"))
    counts, rows = defaultdict(int), []
    for pos, offset, lemma, _, examples in groups:
        split = split_of(lemma)
        if counts[split] >= MAX_GROUPS[split]:
            continue
        counts[split] += 1
        rows += [(split, f"{lemma.replace(' ', '_')}.{pos[0]}.{offset}", e) for e in examples[:4]]
    return rows


def definition_rows(synsets) -> list[tuple[str, str, str, str]]:
    nouns = [s for s in synsets if s[0] == "noun" and s[2].isalpha() and s[2].islower()
             and 3 <= len(s[3].split()) <= 25]
    nouns.sort(key=lambda s: _hash(s[1], "definition:"))
    by_split = defaultdict(list)
    for s in nouns:
        by_split[split_of(s[2])].append(s)
    rows = []
    for split, items in by_split.items():
        own = defaultdict(set)  # word -> its definitions: a drawn "other" must not be one of them
        for s in items:
            own[s[2]].add(s[3])
        items = items[:MAX_DEFINITIONS[split]]
        for i, (_, _, word, definition, _) in enumerate(items):
            if i % 2 == 0:
                rows.append((split, "match", word, definition))
                continue
            other = items[(i * 7919 + 13) % len(items)][3]  # a fixed draw within the same split
            if other not in own[word]:
                rows.append((split, "other", word, other))
    return sorted(rows, key=lambda r: (r[0] != "train", _hash(r[2] + r[3], "order:")))


def write(path: Path, rows) -> None:
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    per = defaultdict(int)
    for r in rows:
        per[r[0]] += 1
    print(f"{path.name:<22} {dict(per)}")


def arguments(doc: str, argv: list[str] | None) -> argparse.Namespace:
    """--corpus (where fetched packages are cached) and --out (data/tasks), for the data builders."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "tasks")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, argv)
    fetcher = build_corpus.Fetcher(args.corpus)
    try:
        root, version = fetcher.deb("wordnet-base")
        synsets = list(wordnet_synsets(root))
    finally:
        build_corpus.shutil.rmtree(fetcher.scratch, ignore_errors=True)
    print(f"wordnet-base {version}: {len(synsets)} noun and verb synsets")
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "synsets.tsv", synset_rows(synsets))
    write(args.out / "definition-match.tsv", definition_rows(synsets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
