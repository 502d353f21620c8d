"""scripts/zoo_local.py: the CPU zoo, family after family, resumable across sittings (tiny
shape, a few hundred corpus lines: the schedule and the resume, not the learning)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts import zoo_local as L

REPO = Path(__file__).resolve().parents[3]
TINY = ["--tiny", "--max-sentences", "400", "--heldout-limit", "12", "--trial-tokens", "1500",
        "--tokens", "3000", "--batch-size", "4", "--grid", "lr=1e-3,2e-3", "--evals", "1",
        "--checkpoint-every", "2"]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    lines = [s for s in (REPO / "data" / "train_sample.txt").read_text(encoding="utf-8").splitlines() if s][:400]
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "train_ordered.tsv").write_text("".join(f"sample\t{s}\n" for s in lines), encoding="utf-8")
    return folder


def _weights(folder: Path) -> bytes:
    return (folder / "model.safetensors").read_bytes()


def test_a_family_runs_its_trials_then_resumes_its_full_run_where_it_stopped(tmp_path, corpus, capsys):
    work = tmp_path / "work"
    args = ["run", "--work", str(work), "--corpus", str(corpus), "--families", "mini-roberta", *TINY]
    assert L.main(args) == 0
    record = json.loads((work / "export" / "mini-roberta" / "record.json").read_text(encoding="utf-8"))
    trials = record["tuning"]["trials"]
    assert [t["lr"] for t in trials] == [1e-3, 2e-3]  # the same search every family gets
    best = min(trials, key=lambda t: t["piece_loss"])
    assert record["tuning"]["chosen"] == {"lr": best["lr"]}
    assert record["config"]["position_init"] == "local" and record["tokens"] >= 3000
    assert "one family at a time" in record["concurrency"] and record["script"] == "scripts.zoo_local"
    first = _weights(work / "export" / "mini-roberta")

    # a sitting that ended after the full run's last checkpoint, before the export
    log_lines = (work / "mini-roberta" / "train.log").read_text(encoding="utf-8").count("\n")
    import shutil

    shutil.rmtree(work / "export" / "mini-roberta")
    assert L.main(args) == 0
    log = (work / "mini-roberta" / "train.log").read_text(encoding="utf-8").splitlines()[log_lines:]
    assert not any('"trial"' in line for line in log)  # the trials were not run again
    assert any('"resumed"' in line for line in log)  # the full run came back from its checkpoint
    assert _weights(work / "export" / "mini-roberta") == first

    # finished families are skipped; another budget in the same folder is refused
    assert L.main(args) == 0
    assert "mini-roberta: finished earlier" in capsys.readouterr().out
    other = [a if a != "3000" else "6000" for a in args]
    with pytest.raises(SystemExit, match="was started with"):
        L.main(other)


def test_install_refuses_an_unfinished_zoo(tmp_path):
    with pytest.raises(SystemExit, match="not finished: mini-bert"):
        L.main(["install", "--work", str(tmp_path / "none"), "--out", str(tmp_path / "zoo")])
