"""`python -m scripts.zoo search` (the CPU zoo, family after family, resumable across sittings),
`install`, and `gpu run` / `gpu import` (tiny shape, a few hundred corpus lines: the schedule
and the resume, not the learning)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.zoo.allocator import find_tcmalloc
from scripts.zoo import search as L
from scripts.zoo import worker as W
from scripts.zoo.__main__ import main as run_zoo

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
    args = ["search", "--work", str(work), "--corpus", str(corpus), "--families", "mini-roberta", *TINY]
    import signal

    before = signal.getsignal(signal.SIGTERM)
    assert run_zoo(args) == 0
    assert signal.getsignal(signal.SIGTERM) is before  # the run's own SIGTERM handler is gone after it
    record = json.loads((work / "export" / "mini-roberta" / "record.json").read_text(encoding="utf-8"))
    trials = record["tuning"]["trials"]
    assert [t["lr"] for t in trials] == [1e-3, 2e-3]  # the same search every family gets
    best = min(trials, key=lambda t: t["piece_loss"])
    assert record["tuning"]["chosen"] == {"lr": best["lr"]}
    assert record["config"]["position_init"] == "local" and record["tokens"] >= 3000
    assert record["corpus"] == {"sentences": 400, "file": "train_ordered.tsv"}  # --max-sentences 400
    assert "no other family training at the same time" in record["concurrency"]
    # the family's process ran with the allocator the search chose for it (auto: tcmalloc when installed)
    assert record["allocator"] == ("tcmalloc" if find_tcmalloc() else "glibc")
    assert record["script"] == "scripts.zoo search" and record["tuning"]["search"] == W.SEARCHES["prefix"]
    first = _weights(work / "export" / "mini-roberta")

    # a sitting that ended after the full run's last checkpoint, before the export
    log_lines = (work / "mini-roberta" / "train.log").read_text(encoding="utf-8").count("\n")
    import shutil

    shutil.rmtree(work / "export" / "mini-roberta")
    assert run_zoo(args) == 0
    log = (work / "mini-roberta" / "train.log").read_text(encoding="utf-8").splitlines()[log_lines:]
    assert not any('"trial"' in line for line in log)  # the trials were not run again
    assert any('"resumed"' in line for line in log)  # the full run came back from its checkpoint
    assert _weights(work / "export" / "mini-roberta") == first

    # finished families are skipped; another budget in the same folder is refused
    assert run_zoo(args) == 0
    assert "mini-roberta: finished earlier" in capsys.readouterr().out
    other = [a if a != "3000" else "6000" for a in args]
    with pytest.raises(SystemExit, match="was started with"):
        run_zoo(other)


def test_install_refuses_an_unfinished_zoo(tmp_path):
    with pytest.raises(SystemExit, match="not finished: mini-bert"):
        run_zoo(["install", "--work", str(tmp_path / "none"), "--out", str(tmp_path / "zoo")])


def test_the_chosen_prefix_trial_goes_on_into_the_same_run_as_one_trained_straight(tmp_path, corpus):
    """--search prefix: the chosen trial is the opening of its full run, so the shipped weights
    are the ones a single straight run at the chosen setting gives (--search separate with a
    one-point grid is that run: trained from scratch on the full budget)."""
    prefix, straight = tmp_path / "prefix", tmp_path / "straight"
    common = ["--corpus", str(corpus), "--families", "mini-roberta", *TINY]
    assert run_zoo(["search", "--work", str(prefix), *common]) == 0
    record = json.loads((prefix / "export" / "mini-roberta" / "record.json").read_text(encoding="utf-8"))
    chosen = record["tuning"]["chosen"]["lr"]
    trials = {t["lr"]: t for t in record["tuning"]["trials"]}
    assert all(1500 <= t["tokens"] < 3000 for t in trials.values())  # stopped on the trial budget, mid-schedule
    assert record["tokens"] >= 3000
    from models.zoo.cards import tuning_line

    assert "The search: each grid point is the opening 1,500 tokens of its own full run" in tuning_line(record)
    # every trial left a checkpoint; the full run resumed from the chosen one
    assert sorted(p.name for p in (prefix / "mini-roberta").glob("trial-*.ckpt")) == [
        "trial-lr=0.001.ckpt", "trial-lr=0.002.ckpt"]
    log = (prefix / "mini-roberta" / "train.log").read_text(encoding="utf-8")
    assert f'"resumed": {{"step": {trials[chosen]["steps"]}, "tokens": {trials[chosen]["tokens"]}}}' in log

    grid = [a if a != "lr=1e-3,2e-3" else f"lr={chosen}" for a in common]
    assert run_zoo(["search", "--work", str(straight), "--search", "separate", *grid]) == 0
    assert _weights(straight / "export" / "mini-roberta") == _weights(prefix / "export" / "mini-roberta")


def test_a_record_says_which_families_trained_beside_it():
    """Sittings of families in other search processes that overlap in time are named; the
    load samples are summarised (median and range)."""
    sittings = [
        {"family": "mini-albert", "start": 0.0, "end": 100.0, "load": [2.0, 3.5, 4.0], "pid": 1},
        {"family": "mini-roberta", "start": 50.0, "end": 150.0, "load": [], "pid": 2},
        {"family": "mini-deberta", "start": 150.0, "end": 200.0, "load": [], "pid": 2},  # starts as roberta ends
        {"family": "mini-electra", "start": 120.0, "end": None, "load": [], "pid": 3},  # still running
        {"family": "mini-albert", "start": 300.0, "end": 400.0, "load": [1.0], "pid": 1},  # a second sitting
    ]
    def alive(pid):  # process 3 (electra's) still runs
        return pid == 3

    albert = L.concurrency_of("mini-albert", sittings, now=500.0, alive=alive)
    assert albert["beside"] == ["mini-electra", "mini-roberta"] and albert["sittings"] == 2
    assert albert["load"] == [1.0, 2.0, 3.5, 4.0]
    assert "median 3.5 (range 1.0-4.0" in albert["text"] and "in 2 sittings" in albert["text"]
    assert L.concurrency_of("mini-deberta", sittings, now=500.0, alive=alive)["beside"] == ["mini-electra"]
    bert = {"family": "mini-bert", "start": 600.0, "end": 700.0, "load": [], "pid": 4}
    assert L.concurrency_of("mini-bert", sittings + [bert], now=800.0, alive=alive)["beside"] == ["mini-electra"]
    # electra's process was killed before it could write its end: it stopped when its file was last written
    killed = [s if s["family"] != "mini-electra" else {**s, "written": 250.0} for s in sittings]
    alone = L.concurrency_of("mini-bert", killed + [bert], now=800.0, alive=lambda pid: False)
    assert alone["beside"] == [] and "no other family training at the same time" in alone["text"]
    assert L.concurrency_of("mini-deberta", killed, now=800.0, alive=lambda pid: False)["beside"] == ["mini-electra"]


def test_a_sitting_stopped_by_a_kill_writes_its_end(tmp_path, corpus):
    """SIGTERM (a kill, the end of a sitting) still runs the sitting's finally: its end is on disk."""
    import os
    import signal
    import subprocess
    import sys
    import time

    work = tmp_path / "work"
    cmd = [sys.executable, "-m", "scripts.zoo", "search", "--work", str(work), "--corpus", str(corpus),
           "--families", "mini-roberta", *TINY]
    proc = subprocess.Popen(cmd, cwd=str(REPO))
    deadline = time.time() + 60
    while not list((work / "sittings").glob("*.json")) and time.time() < deadline:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    (sitting,) = L.sittings(work)
    assert sitting["family"] == "mini-roberta" and sitting["end"] is not None and sitting["end"] >= sitting["start"]


def test_distilbert_s_prefix_trials_learn_from_the_finished_mini_bert(tmp_path, corpus):
    """A prefix trial is the start of DistilBERT's full run, so its teacher is mini-bert's full
    run from the first step (not BERT's best trial, as in the separate search): the teacher
    the shipped DistilBERT names."""
    work = tmp_path / "work"
    assert run_zoo(["search", "--work", str(work), "--corpus", str(corpus), "--families", "mini-bert",
                    "mini-distilbert", *TINY]) == 0
    record = json.loads((work / "export" / "mini-distilbert" / "record.json").read_text(encoding="utf-8"))
    assert record["teacher"] == "mini-bert's full run (the shipped mini-bert), in the trials too"
    assert not (work / "mini-bert" / "trial-best").exists()  # no trial was saved as a teacher
    assert (work / "mini-bert" / "final" / "config.json").is_file()


def test_the_gpu_schedule_refuses_a_prefix_search_without_a_probe(tmp_path):
    """`gpu run` sets its budget from throughput: a prefix trial must know that budget's
    schedule before its first step, so without a probe the command says so before it starts."""
    with pytest.raises(SystemExit, match="--probe-s more than 0"):
        run_zoo(["gpu", "run", "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--probe-s", "0"])
    assert not (tmp_path / "work").exists()


def test_the_gpu_schedule_s_prefix_search_sets_its_budget_from_the_probes_before_any_trial(tmp_path, corpus):
    """The GPU command with --search prefix: every family's probe rate, then one budget and
    its trial share (written before any trial), each trial the opening of its run on that
    schedule, the chosen one going on; DistilBERT learns from mini-bert's full run."""
    work, out = tmp_path / "work", tmp_path / "out"
    (tmp_path / "pack").mkdir()
    import lzma

    (tmp_path / "pack" / "train_ordered.tsv.xz").write_bytes(
        lzma.compress((corpus / "train_ordered.tsv").read_bytes()))
    tiny = [a for a in TINY if a not in ("--trial-tokens", "1500")]
    assert run_zoo(["gpu", "run", "--device", "cpu", "--out", str(out), "--work", str(work), "--pack", str(tmp_path / "pack"),
                    "--budget-s", "400", "--search", "prefix", "--probe-s", "2", "--trial-fraction", "0.25",
                    "--families", "mini-bert", "mini-roberta", "mini-distilbert", *tiny]) == 0
    budget = json.loads((work / "budget.json").read_text(encoding="utf-8"))
    probes = {f: json.loads((work / f / "probe.json").read_text(encoding="utf-8")) for f in ("mini-bert", "mini-roberta")}
    for family, probe in probes.items():
        assert budget["rates"][family] == probe["tokens_per_s"] > 0 and probe["steps"] >= 1
    # the probes are timed side by side, as the families train: one window, opened once both were tokenized
    assert probes["mini-bert"]["window_start"] == probes["mini-roberta"]["window_start"]
    assert all((work / f / "ready").stat().st_mtime <= probes[f]["window_start"] for f in probes)
    assert not (work / "mini-distilbert" / "probe.json").exists()  # its rate is estimated from its teacher's
    assert budget["passes"] == 1 + 0.25 and budget["trial_tokens"] == int(budget["tokens"] * 0.25)
    assert budget["tokens"] <= 3000  # the --tokens cap
    started = (work / "budget.json").stat().st_mtime
    for family in ("mini-bert", "mini-roberta", "mini-distilbert"):
        record = json.loads((work / "export" / family / "record.json").read_text(encoding="utf-8"))
        assert record["tuning"]["search_kind"] == "prefix" and record["tuning"]["trial_tokens"] == budget["trial_tokens"]
        assert [t["lr"] for t in record["tuning"]["trials"]] == [1e-3, 2e-3]
        assert all(budget["trial_tokens"] <= t["tokens"] < budget["tokens"] for t in record["tuning"]["trials"])
        assert record["tokens"] >= budget["tokens"] and record["config"]["tokens"] == budget["tokens"]
        assert not record["stopped_at_deadline"]
        log = (work / family / "train.log").read_text(encoding="utf-8")
        assert '"resumed"' in log  # the full run went on from the chosen trial's checkpoint
        assert (work / family / "trials.json").stat().st_mtime >= started
    assert "in the trials too" in json.loads(
        (work / "export" / "mini-distilbert" / "record.json").read_text(encoding="utf-8"))["teacher"]
    assert sorted(p.name for p in out.iterdir()) == ["run.log", "zoo.tar.gz.part-00"]


def test_trials_only_runs_the_search_and_stops(tmp_path, corpus, capsys):
    """--trials-only: each trial (a prefix of its own full run) and its score, then no full run;
    the same command again finds the family done."""
    work = tmp_path / "work"
    args = ["search", "--work", str(work), "--corpus", str(corpus), "--families", "mini-roberta", "--trials-only",
            *[a if a != "lr=1e-3,2e-3" else "lr=4e-3" for a in TINY]]
    assert run_zoo(args) == 0
    trials = json.loads((work / "mini-roberta" / "trials.json").read_text(encoding="utf-8"))["trials"]
    assert [t["lr"] for t in trials] == [4e-3] and 1500 <= trials[0]["tokens"] < 3000
    assert not (work / "export").exists() and not (work / "mini-roberta" / "full.ckpt").exists()
    assert f"mini-roberta: trials only: lr 0.004: {trials[0]['piece_loss']:.3f}" in capsys.readouterr().out
    assert run_zoo(args) == 0
    assert "mini-roberta: finished earlier" in capsys.readouterr().out


def test_the_defaults_are_the_shipped_zoo_s_recipe(monkeypatch):
    """`search` with no settings asks for the budget every shipped record was trained
    with (its budget.settings), so the same command reproduces the zoo."""
    shipped = json.loads((REPO / "weights" / "zoo" / "mini-bert" / "record.json").read_text(encoding="utf-8"))
    if shipped.get("script") != "scripts.zoo search":
        pytest.skip("the shipped zoo was not trained by the search")
    seen = {}
    monkeypatch.setattr(L, "run", lambda args: seen.update(vars(args)) or 0)
    assert run_zoo(["search"]) == 0
    assert {k: seen[k] for k in L.SETTINGS} == shipped["budget"]["settings"]


@pytest.mark.skipif(find_tcmalloc() is None, reason="tcmalloc not installed (make tcmalloc)")
def test_the_allocator_changes_no_weight(tmp_path, corpus):
    """The same tiny run (its search and full run, bf16, two worker threads) in a process under
    tcmalloc and in one under glibc's allocator exports the same weights byte for byte, and each
    record names the allocator its process ran with."""
    weights = {}
    for allocator in ("tcmalloc", "glibc"):
        work = tmp_path / allocator
        assert run_zoo(["search", "--work", str(work), "--corpus", str(corpus), "--families", "mini-roberta",
                        "--allocator", allocator, *TINY]) == 0
        record = json.loads((work / "export" / "mini-roberta" / "record.json").read_text(encoding="utf-8"))
        assert record["allocator"] == allocator and record["config"]["autocast"] == "bf16"
        weights[allocator] = _weights(work / "export" / "mini-roberta")
    assert weights["tcmalloc"] == weights["glibc"]


def test_a_diverged_trial_is_never_chosen():
    """A larger learning rate can diverge at a GPU's batch (the grid goes up to 8e-3): its NaN
    loss, which compares false with every number, must not stay chosen when it comes first."""
    nan, good, worse = {"lr": 8e-3, "piece_loss": float("nan")}, {"lr": 2e-3, "piece_loss": 5.2}, \
        {"lr": 4e-3, "piece_loss": float("inf")}
    assert min([nan, good, worse], key=W.trial_loss) is good
    assert W.trial_loss(nan) > W.trial_loss(good) and not (nan["piece_loss"] > good["piece_loss"])


def test_an_imported_zoo_ships_mini_albert_s_order_reference(tmp_path, corpus):
    """`gpu import` (as `install`) gives a new mini-albert the bag-of-words order
    reference that its card, Compare and the pair views show beside its SOP head, on the same
    held-out pairs as the head's own score; without the corpus it stops before it replaces a
    folder (the GPU zoo's first import lacked the reference and failed two pair-view tests)."""
    import lzma

    work, out, pack, zoo = tmp_path / "work", tmp_path / "out", tmp_path / "pack", tmp_path / "zoo"
    # 3,000 of the sample's lines as a novel's running text: enough chunks for held-out pairs
    # (2 % of them), of running text too (the reference also reads running text alone)
    lines = [s for s in (REPO / "data" / "train_sample.txt").read_text(encoding="utf-8").splitlines() if s][:3000]
    text = "".join(f"austen\t{s}\n" for s in lines)
    (corpus / "train_ordered.tsv").write_text(text, encoding="utf-8")
    pack.mkdir()
    (pack / "train_ordered.tsv.xz").write_bytes(lzma.compress(text.encode("utf-8")))
    tiny = [a for a in TINY if a not in ("--trial-tokens", "1500", "--max-sentences", "400")]
    assert run_zoo(["gpu", "run", "--device", "cpu", "--out", str(out), "--work", str(work), "--pack", str(pack),
                    "--budget-s", "300", "--probe-s", "2", "--families", "mini-albert", *tiny]) == 0
    zoo.mkdir()
    (zoo / "mini-albert").mkdir()
    (zoo / "mini-albert" / "old.txt").write_text("the zoo before", encoding="utf-8")
    with pytest.raises(SystemExit, match="mini-albert's record needs the bag-of-words order reference"):
        run_zoo(["gpu", "import", str(out), "--out", str(zoo), "--staging", str(tmp_path / "staging"),
                 "--corpus", str(tmp_path / "no-corpus")])
    assert (zoo / "mini-albert" / "old.txt").is_file()  # nothing replaced
    assert run_zoo(["gpu", "import", str(out), "--out", str(zoo), "--staging", str(tmp_path / "staging"),
                    "--corpus", str(corpus), "--reference-pairs", "2000"]) == 0  # the shipped one: 80,000
    record = json.loads((zoo / "mini-albert" / "record.json").read_text(encoding="utf-8"))
    reference = record["pair_reference"]
    assert reference["pairs"] == record["pair_heldout"]["pairs"] > 0 and 0.0 <= reference["accuracy"] <= 1.0
    assert reference["script"] == "scripts.zoo heads sop" and not (zoo / "mini-albert" / "old.txt").exists()
    assert "bag-of-words" in (zoo / "mini-albert" / "MODEL_CARD.md").read_text(encoding="utf-8")
