"""The registry: specs, availability, the default, and the Hub-loading path on local files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers import MLM_KEY, REPO, fake_hub_cache
from models import SPECS, UnknownModelError, get_spec, list_models
from models.registry.catalogue import default_model_key
from models.registry import catalogue as registry

ZOO = {
    "bert-base-uncased",
    "bert-large-uncased",
    "roberta-base",
    "distilbert-base-uncased",
    "albert-base-v2",
    "microsoft/deberta-v3-base",
    "answerdotai/ModernBERT-base",
    "google/electra-small-generator",
}


def test_specs_cover_the_zoo_and_every_family():
    assert ZOO <= {s.source for s in SPECS if s.source_kind == "hub"}
    assert {"bert", "roberta", "distilbert", "albert", "deberta-v2", "modernbert", "electra"} <= {
        s.family for s in SPECS
    }
    keys = [s.key for s in SPECS]
    assert len(keys) == len(set(keys))
    for spec in SPECS:
        assert spec.provenance and spec.display_name and (spec.mask_token or spec.is_decoder)
    assert get_spec("roberta-base").mask_token == "<mask>"


def test_list_models_marks_exactly_one_available_mlm_default():
    models = list_models()
    defaults = [m for m in models if m.default]
    assert len(defaults) == 1
    assert defaults[0].available and defaults[0].has_mlm_head
    by_key = {m.key: m for m in models}
    # the embedded models are installed by setup and work offline
    assert by_key[MLM_KEY].available and by_key[MLM_KEY].embedded
    assert by_key["minilm-l6"].available and not by_key["minilm-l6"].has_mlm_head
    for m in models:
        assert isinstance(m.availability, str) and m.availability


def test_unknown_key():
    with pytest.raises(UnknownModelError, match="Choose one of"):
        get_spec("bert-huge")


def test_missing_embedded_folder_is_unavailable_with_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("ENCODER_LAB_MODELS_DIR", str(tmp_path))
    available, why = registry.availability(get_spec(MLM_KEY))
    assert not available and "make setup" in why


def test_unreachable_hub_is_detected_fast(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    registry._probe_cache.clear()
    attempts = []
    real_connect = registry.socket.create_connection

    def connect(address, timeout=None, *args, **kwargs):
        attempts.append((address, timeout))
        return real_connect(address, timeout, *args, **kwargs)

    monkeypatch.setattr(registry.socket, "create_connection", connect)
    assert registry.hub_reachable() is False
    # one bounded probe (not transformers' minute of retries), then the answer is cached
    assert attempts == [(("127.0.0.1", 9), 2.0)]
    assert registry.hub_reachable() is False and len(attempts) == 1
    monkeypatch.setattr(registry, "hub_cached", lambda repo_id: False)
    available, why = registry.availability(get_spec("bert-base"))
    assert not available and "cannot be reached" in why and "python -m scripts.prefetch bert-base" in why
    registry._probe_cache.clear()


def test_hub_model_loads_from_the_hf_cache_offline(tmp_path):
    """The real Hub-loading code, offline, on a cache laid out by hand.

    The embedded BERT MLM's files stand in for bert-base-uncased (same BERT architecture
    and uncased WordPiece vocabulary), placed where a prefetch would have put them.
    """
    cache = tmp_path / "hub"
    fake_hub_cache(cache, "bert-base-uncased", registry.local_path(get_spec(MLM_KEY)))
    script = textwrap.dedent(
        """
        import json
        from models import fill_mask, get_spec, list_models, load_model
        info = {m.key: m for m in list_models()}
        r = fill_mask("bert-base", "The capital of France is [MASK].", top_k=3)
        loaded = load_model(get_spec("bert-base"), head="mlm")
        print(json.dumps({
            "available": info["bert-base"].available,
            "why": info["bert-base"].availability,
            "default": [k for k, m in info.items() if m.default],
            "roberta": info["roberta-base"].available,
            "top": [p.token for p in r.masks[0].predictions],
            "class": type(loaded.model).__name__,
        }))
        """
    )
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["available"] is True and "Hugging Face cache" in data["why"]
    assert data["default"] == ["bert-base"]  # online-zoo BERT is preferred once it is there
    assert data["roberta"] is False
    assert data["class"] == "BertForMaskedLM" and len(data["top"]) == 3


def test_next_sentence_plumbing_on_a_local_bert_for_pretraining(tmp_path):
    """bert-base's NSP path, offline, on a small random-init BertForPreTraining (plumbing only).

    The weights are random, so the probability means nothing; the test checks that the
    Hub-loading path finds the NSP head and that P(IsNext) is the softmax of its logits.
    """
    from transformers import BertConfig, BertForPreTraining

    src = registry.local_path(get_spec(MLM_KEY))
    folder = tmp_path / "bert"
    shutil.copytree(src, folder)
    (folder / "model.safetensors").unlink()
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64)
    BertForPreTraining(config).save_pretrained(folder)
    cache = tmp_path / "hub"
    fake_hub_cache(cache, "bert-base-uncased", folder)
    script = textwrap.dedent(
        """
        import json, torch
        from models import get_spec, load_model, pair_loss
        p = pair_loss("bert-base", "It rained all day.", "The streets were wet.", head="nsp").p_is_next
        loaded = load_model(get_spec("bert-base"), head="nsp")
        enc = loaded.tokenizer("It rained all day.", "The streets were wet.", return_tensors="pt")
        direct = loaded.model(**enc).logits[0].softmax(-1)[0].item()
        print(json.dumps({"p": p, "direct": direct, "class": type(loaded.model).__name__}))
        """
    )
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["class"] == "BertForNextSentencePrediction"
    assert 0 < data["p"] < 1 and abs(data["p"] - data["direct"]) < 1e-6


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("splade-tiny", "splade-tiny"),  # an available MLM: it wins
        ("minilm-mlm", "minilm-mlm"),
        ("minilm-l6", "minilm-mlm"),  # no MLM head: ignored
        ("no-such-model", "minilm-mlm"),  # unknown: ignored
        ("", "minilm-mlm"),
    ],
)
def test_encoder_lab_default_picks_the_opening_model(monkeypatch, override, expected):
    from helpers import skip_if_available

    skip_if_available("bert-base")  # the preference list puts it before the embedded ones
    monkeypatch.setenv("ENCODER_LAB_DEFAULT", override)
    assert default_model_key() == expected
    assert [m.key for m in list_models() if m.default] == [expected]


def test_encoder_lab_default_is_ignored_when_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("ENCODER_LAB_MODELS_DIR", str(tmp_path))  # no embedded MLM installed
    monkeypatch.setenv("ENCODER_LAB_DEFAULT", "splade-tiny")
    assert default_model_key() != "splade-tiny"


def _run_main(monkeypatch, argv):
    """app.main(argv) up to the launch: what it allowed and what it would launch with."""
    import app
    import models

    monkeypatch.setenv(registry.EXTRA_MODELS_ENV, "")  # restored after the test
    devices, launches = [], []
    monkeypatch.setattr(models, "set_device", devices.append)  # keeps the session's models loaded
    monkeypatch.setattr(app, "limit_malloc_arenas", lambda: None)
    monkeypatch.setattr(app, "warm_in_background", lambda views: None)  # nothing to warm here

    class Demo:
        first_views = ()

        def launch(self, **kwargs):
            launches.append(kwargs)

    monkeypatch.setattr(app, "build_demo", Demo)
    app.main(argv)
    return devices, launches


def test_allow_model_flag_adds_hub_models(monkeypatch):
    devices, launches = _run_main(
        monkeypatch, ["--allow-model", "acme/tiny-mlm", "--allow-model", "org/other", "--device", "cpu"]
    )
    assert devices == ["cpu"] and len(launches) == 1
    assert registry.allowed_hub_models() == ("acme/tiny-mlm", "org/other")
    listed = {m.key: m for m in list_models()}
    assert "not vetted" in listed["acme/tiny-mlm"].provenance
    assert get_spec("org/other").source == "org/other"
    assert not registry.is_operator_added(get_spec(MLM_KEY))


@pytest.mark.parametrize("bad", ["../etc", "no-owner", "a/b/c", "acme/x y"])
def test_allow_model_flag_refuses_bad_ids_before_launch(monkeypatch, bad):
    with pytest.raises(SystemExit, match="invalid Hub ids"):
        _run_main(monkeypatch, ["--allow-model", bad])


def test_default_model_flag_opens_every_tab_on_it(monkeypatch):
    monkeypatch.setenv("ENCODER_LAB_DEFAULT", "")  # main sets it for the process: restored after the test
    _, launches = _run_main(monkeypatch, ["--default-model", "splade-tiny"])
    assert len(launches) == 1 and [m.key for m in list_models() if m.default] == ["splade-tiny"]


@pytest.mark.parametrize("key, why", [
    ("no-such-model", "Unknown model 'no-such-model'"),
    ("minilm-l6", "has no masked-LM head"),
    ("bert-large", "not available here"),  # the suite's Hub cache is empty and offline
])
def test_default_model_flag_refuses_what_cannot_open_before_launch(monkeypatch, key, why):
    from helpers import skip_if_available

    skip_if_available("bert-large")
    monkeypatch.setenv("ENCODER_LAB_DEFAULT", key)  # the environment variable is checked as the flag is
    with pytest.raises(SystemExit, match=why):
        _run_main(monkeypatch, [])


def test_a_side_by_side_view_opens_on_one_published_checkpoint_per_family_at_most_three():
    """Online, every Hub checkpoint is available: Compare must not open on all of them (bert-large
    alone is 1.3 GB in float32), nor on two of one family."""
    import dataclasses

    from models import default_selection

    online = tuple(dataclasses.replace(m, available=True) if m.source_kind == "hub" else m for m in list_models())
    chosen = default_selection(online, "mlm")
    specs = {m.key: m for m in online}
    hub_mlms = [m for m in online if m.source_kind == "hub" and m.can("mlm") and not m.stand_in]
    assert len(hub_mlms) > 3 and len(chosen) == 3
    assert all(specs[k].source_kind == "hub" for k in chosen)
    assert len({specs[k].family for k in chosen}) == 3 and "bert-large" not in chosen
    first_of_each = {}
    for m in hub_mlms:  # in catalogue order
        first_of_each.setdefault(m.family, m.key)
    assert chosen == list(first_of_each.values())[:3] == ["bert-base", "roberta-base", "distilbert-base"]
    assert len(default_selection(online, "mlm", published_limit=5)) == 5
