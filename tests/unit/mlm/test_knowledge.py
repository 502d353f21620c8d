"""knowledge_probe: the fact and everyday sets through fill_mask, for every MLM of the registry."""

from __future__ import annotations

import json
import re

import pytest

from helpers import REPO, zoo_reference
from models import (
    PROBE_SETS,
    ZOO_KEYS,
    get_device,
    CapabilityError,
    InputError,
    KnowledgeProbe,
    knowledge_probe,
    list_models,
    load_model,
)
from models.mlm.knowledge import normalise_guess, probe_items
from models import get_spec

FACTS = json.loads((REPO / "data" / "facts_cloze.json").read_text(encoding="utf-8"))["items"]


def test_the_fact_set_is_as_the_issue_asks():
    assert 80 <= len(FACTS) <= 120
    assert len({i["text"] for i in FACTS}) == len(FACTS)
    for item in FACTS:
        assert len(re.findall(r"\[MASK\]", item["text"])) == 1, item["text"]
        assert item["answers"] and all(a == a.lower() and " " not in a for a in item["answers"])
    france = [i for i in FACTS if i["text"] == "The capital of France is [MASK]."]
    assert france and france[0]["answers"] == ["paris"]
    assert len({i["category"] for i in FACTS}) >= 8


def test_no_probe_is_a_training_sentence_of_the_templates():
    """The templated facts never use the fact set's phrasings: with its answer filled in, no
    probe is one of the sentences the templates write (checked on the templates' own output)."""
    from scripts.build_corpus import city_facts, country_facts, element_facts, norm

    countries = [{"name": n, "capital": c, "languages": ["fr", "en"], "subregion": "Western Europe",
                  "demonym": "French", "code": "EU", "currency": "Euro"}
                 for n, c in (("France", "Paris"), ("Italy", "Rome"), ("Japan", "Tokyo"), ("Egypt", "Cairo"))]
    written = {norm(s) for s in country_facts(countries, {"EU": "Europe"})
               + city_facts([{"name": "Paris", "countrycode": "FR"}], {"FR": "France"})
               + element_facts([{"name": "iron", "symbol": "Fe", "number": 26}])}
    for item in FACTS:
        for answer in item["answers"]:
            assert norm(item["text"].replace("[MASK]", answer)) not in written


@pytest.fixture(scope="module")
def mlm_keys():
    return [m.key for m in list_models() if m.has_mlm_head and m.available]


PROBED = 10  # sentences per model: every MLM of the registry answers, the whole set is slow


@pytest.fixture(scope="module")
def probes(mlm_keys):
    return {key: knowledge_probe(key, "facts", limit=PROBED) for key in mlm_keys}


def test_every_available_mlm_answers_including_the_mini_zoo(mlm_keys, probes):
    assert {"mini-bert", "mini-roberta", "mini-albert", "mini-deberta", "mini-electra",
            "mini-distilbert", "mini-modernbert", "splade-tiny"} <= set(mlm_keys)
    for key, probe in probes.items():
        assert isinstance(probe, KnowledgeProbe) and probe.model_key == key
        assert probe.n == PROBED
        assert [i.text for i in probe.items] == [i["text"] for i in FACTS[:PROBED]]
        for item in probe.items:
            assert len(item.top) == 5 and list(item.scores) == sorted(item.scores, reverse=True)
            guesses = [normalise_guess(t) for t in item.top]
            expected = next((r + 1 for r, g in enumerate(guesses) if g in item.answers), None)
            assert item.rank == expected
        assert probe.top1_hits == sum(i.rank == 1 for i in probe.items)
        assert probe.top5_hits == sum(i.rank is not None for i in probe.items)
        assert sum(n for n, _, _ in probe.by_category().values()) == probe.n


def test_top5_is_the_transformers_pipelines(mlm_key):
    """The probe's top-5 for each sentence is transformers' fill-mask pipeline's."""
    import copy

    from transformers import pipeline

    loaded = load_model(get_spec(mlm_key), head="mlm")
    pipe = pipeline("fill-mask", model=copy.deepcopy(loaded.model), tokenizer=loaded.tokenizer,
                    device=loaded.device, dtype=loaded.dtype)
    probe = knowledge_probe(mlm_key, "everyday")
    for item in probe.items[:12]:
        expected = pipe(item.text.replace("[MASK]", loaded.tokenizer.mask_token), top_k=5)
        assert list(item.top) == [e["token_str"].strip() for e in expected]
        assert item.scores == pytest.approx([e["score"] for e in expected], abs=1e-4)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_every_familys_top5_is_its_own_pipelines(key):
    """Each mini-zoo family's probe guesses (the "[MASK]" sentences as written) are the fill-mask
    pipeline's on a second copy of its MaskedLM model, with the family's own mask token."""
    from transformers import pipeline

    tok, model = zoo_reference(key, "mlm")
    pipe = pipeline("fill-mask", model=model, tokenizer=tok, device="cpu")
    probe = knowledge_probe(key, "facts", limit=12)
    cpu = get_device().type == "cpu"  # float16 on a GPU keeps about three digits
    for item in probe.items:
        expected = pipe(item.text.replace("[MASK]", tok.mask_token), top_k=5)
        assert list(item.top) == [e["token_str"].strip() for e in expected], item.text
        assert item.scores == pytest.approx([e["score"] for e in expected], abs=1e-4 if cpu else 2e-3)


def test_the_whole_sets_and_a_bpe_tokenizer():
    """mini-roberta writes <mask> and reads BPE pieces ("Ġdoor"): the [MASK] sentences still
    reach it, and its guesses are compared as words."""
    everyday = knowledge_probe("mini-roberta", "everyday")
    assert everyday.probe_set == "everyday" and everyday.n == len(probe_items("everyday")) == 36
    assert all(t == t.strip() and not t.startswith("\u0120") for i in everyday.items for t in i.top)
    assert everyday.top5_hits > 0  # it does guess some everyday words
    assert knowledge_probe("mini-bert", "facts").n == len(FACTS)


def test_refusals_of_limits():
    with pytest.raises(InputError, match="limit"):
        knowledge_probe("mini-bert", "facts", limit=0)
    with pytest.raises(InputError, match="limit"):
        knowledge_probe("mini-bert", "everyday", limit=37)


def test_refusals():
    with pytest.raises(CapabilityError, match="MLM|mask"):
        knowledge_probe("minilm-l6", "facts")
    with pytest.raises(InputError, match="facts"):
        knowledge_probe("mini-bert", "trivia")
    assert set(PROBE_SETS) == {"facts", "everyday"}


@pytest.mark.parametrize("token, word", [("\u0120Paris", "paris"), ("\u2581paris", "paris"),
                                         (" paris", "paris"), ("##s", "s"), ("Paris", "paris")])
def test_guesses_are_compared_as_words(token, word):
    assert normalise_guess(token) == word
