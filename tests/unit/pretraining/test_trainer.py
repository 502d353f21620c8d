"""Pre-training core: loss at masked positions, a tiny live run, the shipped weights' round trip."""

from __future__ import annotations

import importlib
import json

import pytest
import torch
import torch.nn.functional as F

from helpers import REPO
from models import (
    InputError,
    MaskingPolicy,
    apply_masking,
    evaluate_fill_mask,
    list_models,
    load_history,
    load_tokenizer,
    train_tiny,
)
from models.registry import catalogue as registry
from models.pretraining import trainer as pretrain
from models.pretraining.evaluation import unigram_baseline
from models.pretraining.mlm_data import read_sentences
from models import get_spec

SHIPPED = REPO / "weights" / "minilm-mlm"


def _script(name):
    return importlib.import_module(f"scripts.{name}")


@pytest.fixture(scope="module")
def minilm_dir():
    return registry.local_path(registry.get_spec("minilm-l6"))


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(get_spec("minilm-l6"))


def test_loss_at_masked_positions_equals_cross_entropy_over_full_logits(minilm_dir, tok):
    cfg = pretrain.PretrainConfig(init="scratch", scratch_layers=1, scratch_hidden=64)
    model = pretrain.build_model(cfg, minilm_dir).eval()
    enc = tok(["The cat sat on the mat.", "A longer sentence about the river bank and money."],
              padding=True, return_special_tokens_mask=True, return_tensors="pt")
    special = enc["special_tokens_mask"].bool()
    inputs, labels, _ = apply_masking(enc["input_ids"], special, MaskingPolicy(rate=0.5),
                                      mask_token_id=tok.mask_token_id, vocab_size=len(tok),
                                      generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours = pretrain.mlm_loss(model, inputs, enc["attention_mask"], labels)
        logits = model(input_ids=inputs, attention_mask=enc["attention_mask"]).logits
        direct = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)
    assert torch.allclose(ours, direct, atol=1e-5)


def test_tiny_model_learns_and_reports(tok):
    sentences = [line for line in (REPO / "data" / "train_sample.txt").read_text().splitlines()[:2000]]
    events = list(train_tiny(steps=40, seed=1, batch_size=16, sentences=sentences))
    assert events[0].step == 0 and events[0].probes  # the random-weights snapshot
    assert events[-1].step == 40 and events[-1].done and events[-1].probes
    losses = [e.loss for e in events if e.step > 0]
    assert losses[-1] < losses[0] - 1.0  # from ~ln(30522) = 10.3 nats down
    assert all(e.tokens_per_s > 0 for e in events[1:])


def test_tiny_training_stops_when_asked():
    calls = iter(range(100))
    events = list(train_tiny(steps=500, sentences=["The cat sat on the mat."] * 200,
                             should_stop=lambda: next(calls) >= 5))
    assert max(e.step for e in events) <= 5


@pytest.mark.parametrize("steps", [0, -1, 10_001, 2.5])
def test_tiny_training_bad_steps(steps):
    with pytest.raises(InputError):
        next(train_tiny(steps=steps))


def test_overlay_round_trip_keeps_every_trained_tensor(tmp_path, minilm_dir, tok):
    """Train briefly, save only the trained tensors, assemble the folder, load it back."""
    cfg = pretrain.PretrainConfig(steps=3, batch_size=8, eval_every=10**9, snapshot_fractions=())
    model = pretrain.build_model(cfg, minilm_dir)
    for _ in pretrain.train_mlm(cfg, model, tok, ["The cat sat on the mat."] * 50, [], []):
        pass
    overlay = tmp_path / "trained.safetensors"
    _script("pretrain").save_trained(model, overlay, cfg)
    folder = _script("fetch_embedded").assemble_mlm(tmp_path, overlay=overlay)
    from transformers import AutoModelForMaskedLM

    loaded = AutoModelForMaskedLM.from_pretrained(str(folder)).eval()
    assert loaded.cls.predictions.decoder.weight is loaded.bert.embeddings.word_embeddings.weight
    bias = model.cls.predictions.bias.detach().half().float()
    assert bias.abs().sum() > 0  # trained, so not zeros...
    assert torch.equal(loaded.cls.predictions.bias.detach(), bias)  # ...and not dropped on save
    assert torch.equal(loaded.cls.predictions.decoder.bias.detach(), bias)
    # the loaded model computes what the trained one does (up to the float16 storage)
    for name, p in model.named_parameters():
        if p.requires_grad:
            p.data = p.data.half().float()
    enc = tok("The cat sat on the [MASK].", return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(loaded(**enc).logits, model.eval()(**enc).logits, atol=1e-4)


shipped = pytest.mark.skipif(not (SHIPPED / "trained.safetensors").is_file(), reason="no shipped weights")


@shipped
def test_shipped_model_is_the_default_and_small():
    size = (SHIPPED / "trained.safetensors").stat().st_size
    assert size <= 25 * 2**20
    defaults = [m.key for m in list_models() if m.default]
    assert defaults in (["minilm-mlm"], ["bert-base"])  # bert-base only where the Hub is reachable


@shipped
def test_shipped_model_scores_as_its_card_says():
    import copy

    from transformers import pipeline

    from models import load_model
    from models.pretraining.evaluation import everyday_items

    final = json.loads((SHIPPED / "final.json").read_text())
    everyday = evaluate_fill_mask("minilm-mlm", "everyday")
    # the reference: transformers' fill-mask pipeline on its own copy of the model
    loaded = load_model(get_spec("minilm-mlm"), head="mlm")
    pipe = pipeline("fill-mask", model=copy.deepcopy(loaded.model), tokenizer=loaded.tokenizer,
                    device=loaded.device)
    items = everyday_items()
    hits = sum(
        any(r["token_str"].strip().lower() in {a.lower() for a in item["answers"]} for r in pipe(item["text"], top_k=5))
        for item in items
    )
    one_sentence = 1 / len(items)
    exact = loaded.dtype == torch.float32  # in float16 a near-tie at rank 5 may swap
    assert abs(everyday.top5 - hits / len(items)) <= (1e-12 if exact else one_sentence + 1e-12)
    # the model card's figure holds for the shipped weights (to one sentence of 36)
    assert abs(final["everyday_top5"] - hits / len(items)) <= one_sentence + 1e-12
    held = evaluate_fill_mask("minilm-mlm", "heldout", limit=400)
    base = unigram_baseline(load_tokenizer(get_spec("minilm-l6")),
                            read_sentences(REPO / "data" / "train_sample.txt"),
                            read_sentences(REPO / "data" / "heldout.txt")[:400])
    assert held.top1 > base.top1 + 0.1 and held.top5 > base.top5 + 0.1
    splade = evaluate_fill_mask("splade-tiny", "heldout", limit=400)
    assert held.top5 > splade.top5


@shipped
def test_shipped_history_has_snapshots_and_a_falling_loss():
    history = load_history(SHIPPED)
    assert list(history.steps) == sorted(history.steps)
    assert history.snapshots[0]["step"] == 0
    assert history.snapshots[-1]["step"] == history.steps[-1]  # the last snapshot is the shipped state
    assert history.loss[-1] < history.loss[0]
    assert history.eval_top5[-1] > history.eval_top5[0]


def test_evaluate_refuses_unknown_split():
    with pytest.raises(InputError, match="Unknown split"):
        evaluate_fill_mask("splade-tiny", "train")


def _tiny_cfg(**kw):
    return pretrain.PretrainConfig(init="scratch", scratch_layers=1, scratch_hidden=64, batch_size=8,
                                   eval_every=10**9, **kw)


class _FakeClock:
    """A monotonic clock that moves ``tick`` seconds each time it is read: no real waiting."""

    def __init__(self, tick: float):
        self.now, self.tick = 1000.0, tick

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now


def test_time_budget_ends_the_run_with_the_learning_rate_decayed(minilm_dir, tok, monkeypatch):
    """--minutes: the run stops when the budget is spent, its schedule at zero, its snapshots taken."""
    import models.pretraining.schedule

    monkeypatch.setattr(models.pretraining.schedule, "time", _FakeClock(tick=0.25))  # the training schedule's clock only
    cfg = _tiny_cfg(steps=10**6, minutes=0.1, warmup=0.1, snapshot_fractions=(0.0, 0.5, 1.0))
    model = pretrain.build_model(cfg, minilm_dir)
    events = list(pretrain.train_mlm(cfg, model, tok, ["The cat sat on the mat."] * 64, [], ["The [MASK] sat."],
                                     log_every=1))
    last = events[-1]
    assert last.done and last.step == last.steps < 10**6  # ended by the clock, not the step count
    assert last.elapsed_s >= 0.1 * 60 and last.step < 0.1 * 60 / 0.25  # its budget, on its clock
    assert last.lr == 0.0 and max(e.lr for e in events) > 0.5 * cfg.lr_head
    shares = [e.extra["progress"] for e in events[1:]]
    assert shares == sorted(shares) and shares[-1] == 1.0
    snap = [e.extra.get("progress", 0.0) for e in events if e.probes]
    assert len(snap) == 3 and snap[0] == 0.0 and 0.5 <= snap[1] < 1.0 and snap[2] == 1.0


def test_bf16_autocast_loss_is_close_to_float32(minilm_dir, tok):
    model = pretrain.build_model(_tiny_cfg(), minilm_dir).eval()
    enc = tok(["The cat sat on the mat.", "A river bank."], padding=True, return_special_tokens_mask=True,
              return_tensors="pt")
    inputs, labels, _ = apply_masking(enc["input_ids"], enc["special_tokens_mask"].bool(), MaskingPolicy(rate=0.5),
                                      mask_token_id=tok.mask_token_id, vocab_size=len(tok),
                                      generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = pretrain.mlm_loss(model, inputs, enc["attention_mask"], labels)
        half = pretrain.mlm_loss(model, inputs, enc["attention_mask"], labels, autocast="bf16")
    assert half.dtype == torch.float32
    assert abs(float(half) - float(full)) < 0.02 * float(full)
    with pytest.raises(ValueError, match="autocast"):
        pretrain.mlm_loss(model, inputs, enc["attention_mask"], labels, autocast="fp8")


def test_a_resumed_run_continues_the_record(tmp_path, minilm_dir):
    """--resume: weights from the first run, one log and snapshot list, and a card with both stages."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sample = (REPO / "data" / "train_sample.txt").read_text().splitlines()
    (corpus / "train.txt").write_text("\n".join(sample[:80]) + "\n")
    (corpus / "heldout.txt").write_text("\n".join((REPO / "data" / "heldout.txt").read_text().splitlines()[:8]) + "\n")
    script = _script("pretrain")
    common = ["--corpus", str(corpus), "--batch-size", "8", "--eval-every", "2", "--eval-sentences", "4",
              "--snapshots", "0,1"]
    first, second = tmp_path / "first", tmp_path / "second"
    assert script.main(["--out", str(first), "--steps", "4", *common]) == 0
    assert script.main(["--out", str(second), "--steps", "3", "--train-from-layer", "0", "--resume", str(first),
                        *common]) == 0

    log = [json.loads(line) for line in (second / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [0, 2, 4, 6, 7]  # evaluations every 2 steps, and the end
    assert [r["stage"] for r in log] == [1, 1, 1, 2, 2]
    first_log = [json.loads(line) for line in (first / "log.jsonl").read_text().splitlines()]
    first_tokens = first_log[-1]["extra"]["tokens"]
    assert log[-1]["extra"]["tokens"] > first_tokens and log[-1]["elapsed_s"] > first_log[-1]["elapsed_s"]
    snapshots = json.loads((second / "snapshots.json").read_text())
    assert [(s["step"], s["stage"]) for s in snapshots] == [(0, 1), (4, 1), (7, 2)]
    assert [s["fraction"] for s in snapshots] == [0.0, 4 / 7, 1.0]
    config = json.loads((second / "config.json").read_text())
    assert config["continued_from"]["steps"] == 4 and config["continued_from"]["tokens"] == first_tokens

    # the second run started from the first run's tensors
    model = pretrain.build_model(pretrain.PretrainConfig(train_from_layer=0), minilm_dir)
    script.Previous.read(first, model)
    from safetensors.torch import load_file

    saved = load_file(str(first / "trained.safetensors"))
    state = model.state_dict()
    assert all(torch.equal(state[k], v.float()) for k, v in saved.items())

    export = _script("export_mlm")
    card = export.model_card(second, None)
    parts = export.stages(config, json.loads((second / "final.json").read_text()), log)
    assert [(p["steps"], p["config"]["train_from_layer"]) for p in parts] == [(4, 2), (3, 0)]
    assert parts[0]["tokens"] + parts[1]["tokens"] == log[-1]["extra"]["tokens"]
    assert "in 2 stages, 7 steps" in card and "\n1. Encoder layers 3-6" in card and "\n2. Encoder layers 1-6" in card


@shipped
def test_registry_provenance_says_what_the_shipped_run_trained():
    config = json.loads((SHIPPED / "config.json").read_text())
    last = json.loads((SHIPPED / "log.jsonl").read_text().splitlines()[-1])
    text = registry.get_spec("minilm-mlm").provenance
    assert f"encoder layers {config['train_from_layer'] + 1}-6 and a new MLM head" in text
    assert f"{last['step']:,} steps" in text and "trained by this project" in text
    stages = last.get("stage", 1)  # the log numbers each stage's records; the text counts the configs
    assert f"in {stages} stage{'s' if stages > 1 else ''} on " in text


@shipped
def test_the_shipped_card_is_the_one_its_records_write():
    """weights/minilm-mlm/MODEL_CARD.md is what `scripts.export_mlm` writes from the shipped
    config, log and final scores; only its stage notes (the export's --note) are free text."""
    import re

    shipped_card = (SHIPPED / "MODEL_CARD.md").read_text(encoding="utf-8")
    notes = re.search(r"\n\n((?:Stage \d+ \(.*?\n\n)+)\*\*Scores\*\*", shipped_card, re.S)
    note = notes.group(1).rstrip("\n") if notes else ""
    assert shipped_card == _script("export_mlm").model_card(SHIPPED, None, note), (
        "weights/minilm-mlm/MODEL_CARD.md drifted from its records: export the run again")
