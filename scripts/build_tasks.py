"""Write the labelled fine-tuning tasks of ``models.tasks.task_data`` into ``data/tasks/`` (committed).

Every label comes from where the text comes from, never from a model:

* ``source.tsv``       which corpus source a sentence comes from (6 sources), read from
                       ``.cache/corpus/train_ordered.tsv`` (``scripts/build_corpus.py``).
* ``fiction-speech.tsv`` novels and stories (austen, novels, moby-dick, stories) vs State of
                       the Union addresses (sotu): 2 classes, from the same file.
* ``supersense.tsv``   WordNet 3.0's lexicographer file of a defined noun (noun.animal,
                       noun.artifact, ...) for sentences "A dog is a member of ...", built
                       from ``wordnet-base``'s data.noun exactly as the corpus builds them.
* ``heldout_sources.txt`` the source of each line of ``data/heldout.txt``, line by line (the
                       retrieval corpus), found by running the corpus builder's extractors again
                       (with ``--heldout-sources``; a few minutes).
* ``truecase.tsv``     prose sentences; the token labels (lower / Capitalised / UPPER for each
                       word) are read from the original casing by ``models.tasks.task_data`` at load time.

Each line is ``split<TAB>label<TAB>sentence``. The split is fixed by a hash: a sentence is in
``validation`` when ``sha1("task:" + normalised sentence) % 100 < 30``, else ``train``; a fixed
number per class and split is kept, the first ones in another hash order, so the output is
the same on every machine with the same corpus.

Usage: python -m scripts.build_tasks [--corpus .cache/corpus] [--out data/tasks]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VALIDATION_PERCENT = 30
SOURCE_CLASSES = ("austen", "moby-dick", "sotu", "jargon", "web-bible", "wordnet-ex")
FICTION = ("austen", "novels", "moby-dick", "stories")
SUPERSENSES = ("noun.animal", "noun.artifact", "noun.person", "noun.plant", "noun.act", "noun.state")
TRUECASE_SOURCES = ("austen", "novels", "moby-dick", "stories", "sotu")
# WordNet 3.0's lexicographer files, numbered as in lexnames(5WN).
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute "
    "noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group "
    "noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant "
    "noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
    "noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
# Per class: (train, validation) sentences kept.
SIZES = {"source": (150, 60), "fiction-speech": (200, 100), "supersense": (150, 60), "truecase": (600, 200)}


def _corpus_builder():
    spec = importlib.util.spec_from_file_location("build_corpus", REPO / "scripts" / "build_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hash(text: str, salt: str) -> int:
    key = salt + " ".join(text.lower().split())
    return int.from_bytes(hashlib.sha1(key.encode()).digest()[:8], "big")


def split_of(sentence: str) -> str:
    return "validation" if _hash(sentence, "task:") % 100 < VALIDATION_PERCENT else "train"


def pick(labelled: list[tuple[str, str]], sizes: tuple[int, int]) -> list[tuple[str, str, str]]:
    """(split, label, sentence): the first sizes[split] per label in a fixed hash order."""
    labelled = sorted(set(labelled), key=lambda item: _hash(item[1], "pick:"))
    counts, out = defaultdict(int), []
    for label, sentence in labelled:
        split = split_of(sentence)
        if counts[split, label] < sizes[split == "validation"]:
            counts[split, label] += 1
            out.append((split, label, sentence))
    return sorted(out, key=lambda row: (row[0] != "train", _hash(row[2], "order:")))


def corpus_rows(corpus: Path) -> list[tuple[str, str]]:
    rows = []
    with open(corpus / "train_ordered.tsv", encoding="utf-8") as f:
        for line in f:
            source, _, sentence = line.rstrip("\n").partition("\t")
            rows.append((source, sentence))
    return rows


def supersense_rows(corpus: Path) -> list[tuple[str, str]]:
    """('noun.animal', 'A dog is a member of ...') as build_corpus writes its wordnet-def lines."""
    builder = _corpus_builder()
    fetcher = builder.Fetcher(corpus)
    try:
        root, _ = fetcher.deb("wordnet-base")
        return list(_supersenses(builder, root))
    finally:
        builder.shutil.rmtree(fetcher.scratch, ignore_errors=True)


def _supersenses(builder, root: Path):
    counts = {key: int(cnt) for key, _, cnt in map(str.split, open(
        root / "usr/share/wordnet/cntlist.rev", encoding="latin-1"))}
    for lexfile, words, gloss in builder._synsets(root, "noun"):
        lemma, lex_id = words[0]
        definition = gloss.split(";")[0].strip()
        if (counts.get(f"{lemma.lower()}%1:{lexfile}:{lex_id:02d}::", 0) < 1
                or not lemma.islower() or not lemma.replace("_", "").isalpha()):
            continue
        if not re.match(r"(a|an|any|one|someone|something) ", definition):
            continue
        lemma = lemma.replace("_", " ")
        sentence = builder.as_sentence(f"{'An' if lemma[0] in 'aeiou' else 'A'} {lemma} is {definition}")
        if builder.accept(sentence):
            yield LEXNAMES[int(lexfile)], sentence


def heldout_sources(corpus: Path) -> list[tuple[str, str, str]]:
    """(source, '', sentence) for each held-out sentence: the first source that yields it."""
    builder = _corpus_builder()
    fetcher = builder.Fetcher(corpus)
    wanted = {builder.norm(s): s for s in (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines()}
    found = {}
    try:
        for name, _, extract in builder.SOURCES:
            for s in extract(fetcher)[2]:
                found.setdefault(builder.norm(s), name)
    finally:
        builder.shutil.rmtree(fetcher.scratch, ignore_errors=True)
    return [(found.get(key, ""), "", s) for key, s in wanted.items()]


def write(path: Path, rows) -> None:
    path.write_text("".join(f"{s}\t{l}\t{t}\n" for s, l, t in rows), encoding="utf-8")
    per = defaultdict(int)
    for split, label, _ in rows:
        per[split] += 1
    print(f"{path.name:<20} {dict(per)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "tasks")
    parser.add_argument("--heldout-sources", action="store_true",
                        help="only write heldout_sources.txt (runs every corpus extractor again)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.heldout_sources:
        rows = heldout_sources(args.corpus)
        (args.out / "heldout_sources.txt").write_text("".join(f"{s}\n" for s, _, _ in rows), encoding="utf-8")
        print(f"heldout_sources.txt  {sum(1 for s, _, _ in rows if s)} of {len(rows)} with a source")
        return 0
    rows = corpus_rows(args.corpus)
    write(args.out / "source.tsv", pick([r for r in rows if r[0] in SOURCE_CLASSES], SIZES["source"]))
    speech = [("fiction" if s in FICTION else "speech", t) for s, t in rows if s in FICTION + ("sotu",)]
    write(args.out / "fiction-speech.tsv", pick(speech, SIZES["fiction-speech"]))
    senses = [r for r in supersense_rows(args.corpus) if r[0] in SUPERSENSES]
    write(args.out / "supersense.tsv", pick(senses, SIZES["supersense"]))
    prose = [("-", t) for s, t in rows if s in TRUECASE_SOURCES]
    write(args.out / "truecase.tsv", pick(prose, SIZES["truecase"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
