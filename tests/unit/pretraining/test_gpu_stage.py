"""scripts/gpu_stage_knowledge.py's pure parts (the rounding of the embeddings, the replay
share, and the run's round trip through parts under the size limit) and the CPU stage's mix
(scripts/knowledge_stage.py)."""

from __future__ import annotations

import json

import numpy as np

from helpers import REPO
from scripts import gpu_stage_knowledge as stage


def test_embeddings_round_to_one_step_within_half_a_step():
    rng = np.random.default_rng(0)
    weight = rng.normal(0, 0.05, size=(300, 64)).astype(np.float32)
    codes, step = stage.quantize(weight)
    assert codes.dtype == np.int8 and step == np.float32(weight.std()) * stage.STEP_OF_STD
    inside = np.abs(weight) < 127 * step
    assert np.all(np.abs(codes * step - weight)[inside] <= step / 2 + 1e-7)


def test_replay_share_is_a_fixed_nested_choice():
    sentences = [f"Sentence number {i} of the older sources." for i in range(4000)]
    half = {s for s in sentences if stage.replayed(s, 0.5)}
    most = {s for s in sentences if stage.replayed(s, 0.85)}
    assert half < most and 0.45 < len(half) / 4000 < 0.55 and 0.82 < len(most) / 4000 < 0.88
    assert all(stage.replayed(s, 1.0) for s in sentences)


def test_a_run_comes_back_in_parts_and_is_checked(tmp_path):
    run, out = tmp_path / "run", tmp_path / "out"
    run.mkdir()
    out.mkdir()
    blob = np.random.default_rng(1).integers(0, 256, 2_500_000, dtype=np.uint8).tobytes()  # incompressible
    (run / "trained.safetensors").write_bytes(blob)
    final = {"heldout": {"top1": 0.4, "top5": 0.6, "loss": 3.3, "n_tokens": 10}, "everyday_top5": 0.8, "minutes": 5}
    (run / "final.json").write_text(json.dumps(final))
    for name in ("config.json", "log.jsonl", "snapshots.json"):
        (run / name).write_text(json.dumps({"name": name}))
    parts = stage.split_into(b"x" * 25, out, "probe", part=10)
    assert [p.stat().st_size for p in parts] == [10, 10, 5]
    for p in parts:
        p.unlink()
    parts = stage.pack_run(run, out)
    assert parts and all(p.stat().st_size <= stage.PART_BYTES for p in parts)
    back = stage.import_run(out, tmp_path / "back")
    assert (back / "trained.safetensors").read_bytes() == blob
    assert json.loads((back / "final.json").read_text()) == final
    assert json.loads((back / "config.json").read_text()) == {"name": "config.json"}
    assert not (back / "sha256.json").exists()


def test_the_cpu_stage_mix_weights_the_written_sources_and_replays_a_fixed_share(tmp_path):
    """scripts/knowledge_stage.py's mix: every line of the written and encyclopedic sources,
    each as many times as its weight; of the older sources exactly the hash-chosen replay."""
    from scripts import knowledge_stage as ks

    older = [f"Old sentence number {i} of the novels." for i in range(400)]
    rows = ([("facts-written", "Charles Dickens wrote Oliver Twist in London.")]
            + [("everyday-written", "The baker bakes fresh bread every morning.")]
            + [("gcide", "A teapot is a vessel with a spout.")] + [("novels", s) for s in older])
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train_ordered.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    counts = ks.mix(corpus, tmp_path / "mix", weights={"facts-written": 3, "everyday-written": 2}, replay=0.25)
    lines = (tmp_path / "mix" / "train.txt").read_text(encoding="utf-8").splitlines()
    assert lines.count("Charles Dickens wrote Oliver Twist in London.") == 3
    assert lines.count("The baker bakes fresh bread every morning.") == 2
    assert lines.count("A teapot is a vessel with a spout.") == 1
    kept = [s for s in older if s in lines]
    assert kept == [s for s in older if stage.replayed(s, 0.25)] and 60 < len(kept) < 140
    assert counts == {"facts-written": 3, "everyday-written": 2, "gcide": 1, "novels": len(kept)}
    assert (tmp_path / "mix" / "heldout.txt").read_text() == (REPO / "data" / "heldout.txt").read_text()
    assert lines != [s for _, s in rows]  # shuffled (a fixed order: seed 0)
