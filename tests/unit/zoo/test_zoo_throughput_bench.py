"""bench/zoo_throughput.py: its arguments, and a tiny run of both paths (no timings asserted)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import zoo_throughput as B
from models.zoo.allocator import find_tcmalloc
from models.zoo.families import FAMILIES

REPO = Path(__file__).resolve().parents[3]


def test_arguments_default_to_every_family_three_repeats_and_refuse_zero_steps():
    args = B.parse_args([])
    assert args.families == list(FAMILIES) and args.repeats == 3 and args.steps >= 10 and args.warmup >= 1
    assert args.corpus.name == "train_ordered.tsv"
    assert args.isolate == "family"  # each family in a fresh process, as real training runs
    with pytest.raises(SystemExit):
        B.parse_args(["--steps", "0"])
    with pytest.raises(SystemExit):
        B.parse_args(["--families", "mini-gpt"])


# In fresh processes each repeat of each path starts Python and torch again: one repeat there.
@pytest.mark.parametrize("autocast,isolate,repeats", [("", "none", 2), ("bf16", "family", 1)])
def test_a_tiny_run_times_both_paths_of_each_family_and_reports_their_ratio(tmp_path, autocast, isolate, repeats):
    out = tmp_path / "zoo.json"
    lines = []
    args = B.parse_args(["--autocast", autocast, "--isolate", isolate, "--tiny", "--families", "mini-bert", "mini-electra",
                         "--steps", "2", "--warmup", "1",
                         "--repeats", str(repeats), "--batch-size", "4", "--sentences", "200", "--threads", "1",
                         "--corpus", str(REPO / "data" / "train_sample.txt"), "--json", str(out)])
    result = B.run(args, print_=lines.append)
    text = "\n".join(lines)
    assert result["autocast"] == autocast and ("bf16 autocast" in text) == (autocast == "bf16")
    assert "CPU:" in text and "machine:" in text  # the machine line of bench_common
    assert set(result["families"]) == {"mini-bert", "mini-electra"}
    for family, figures in result["families"].items():
        for suffix in ("", "_cpu"):
            stock, fast, ratio = (figures[k + suffix] for k in ("stock", "fast", "ratio"))
            assert len(stock["runs"]) == len(fast["runs"]) == repeats and min(stock["runs"] + fast["runs"]) > 0
            assert ratio["runs"] == pytest.approx([b / a for a, b in zip(stock["runs"], fast["runs"])])
        assert f"repeat {repeats} {family}" in text
    assert text.count("ratio") >= 4
    pids = result["processes"]
    if isolate == "family":  # fresh processes for each family, none of them this one nor another family's
        mine = {family: {p["pid"] for p in runs} for family, runs in pids.items()}
        assert not mine["mini-bert"] & mine["mini-electra"] and os.getpid() not in mine["mini-bert"] | mine["mini-electra"]
        assert "each family in a fresh process" in text
    else:
        assert set(pids.values()) == {os.getpid()}


def test_recipe_mode_trains_the_fast_path_without_dropout_and_the_stock_path_with_the_configs(monkeypatch):
    from models.zoo import train as Z

    seen, real = [], Z.train_family

    def recording(family, tokenizer, chunks, heldout, cfg, *a, **k):
        seen.append((cfg.fast_kernels, cfg.dropout))
        return real(family, tokenizer, chunks, heldout, cfg, *a, **k)

    monkeypatch.setattr(Z, "train_family", recording)
    lines = []
    args = B.parse_args(["--tiny", "--families", "mini-roberta", "--steps", "1", "--warmup", "1", "--repeats", "1",
                         "--batch-size", "4", "--sentences", "100", "--threads", "1", "--recipe", "--isolate", "none",
                         "--corpus", str(REPO / "data" / "train_sample.txt")])
    result = B.run(args, print_=lines.append)
    assert sorted(seen) == [(False, None), (True, 0.0)] and result["recipe"] is True
    assert "dropout 0 (--recipe)" in lines[1]


def test_a_family_process_that_fails_is_named_with_what_it_printed(monkeypatch):
    import sys

    monkeypatch.setattr(B, "child_argv", lambda args, family, out: [
        sys.executable, "-c", "import sys; print('out of memory in the trainer'); sys.exit(3)"])
    args = B.parse_args(["--tiny", "--families", "mini-albert", "--repeats", "1"])
    with pytest.raises(RuntimeError, match=r"(?s)mini-albert exited with 3.*out of memory in the trainer"):
        B.run(args, print_=lambda _: None)


def test_a_family_process_gets_every_option_of_the_bench_but_the_family_list_isolation_and_output(tmp_path):
    """child_argv rebuilds the command line option by option: each option set away from its
    default must reach the child, so a new option that child_argv forgets fails here."""
    argv = ["--families", "mini-bert", "mini-albert", "--steps", "7", "--warmup", "2", "--repeats", "5",
            "--threads", "1", "--batch-size", "8", "--corpus", str(tmp_path / "c.txt"), "--sentences", "123",
            "--tiny", "--json", str(tmp_path / "parent.json"), "--recipe", "--autocast", "bf16",
            "--allocator", "glibc", "--paths", "fast"]
    parent = B.parse_args(argv)
    defaults = vars(B.parse_args([]))
    assert all(v != defaults[k] for k, v in vars(parent).items() if k != "isolate"), "set every option in argv"
    out = tmp_path / "child.json"
    command = B.child_argv(parent, "mini-albert", out)
    assert command[1:3] == ["-m", "bench.zoo_throughput"]
    child = vars(B.parse_args(command[3:]))
    assert child.pop("families") == ["mini-albert"] and child.pop("isolate") == "none" and child.pop("json") == out
    expected = vars(parent)
    for key in ("families", "isolate", "json"):
        expected.pop(key)
    assert child == expected


def _two_tiny_repeats(family: str, allocator: str):
    return B.parse_args(["--tiny", "--families", family, "--steps", "1", "--warmup", "1", "--repeats", "2",
                         "--batch-size", "4", "--sentences", "100", "--threads", "1", "--allocator", allocator,
                         "--corpus", str(REPO / "data" / "train_sample.txt")])


def test_the_default_allocator_is_training_s_and_a_glibc_bench_keeps_one_process_per_family(tmp_path):
    assert B.parse_args([]).allocator == "auto" and B.parse_args([]).paths == "both"
    args = _two_tiny_repeats("mini-roberta", "glibc")
    lines = []
    result = B.run(args, print_=lines.append)
    runs = result["processes"]["mini-roberta"]
    assert [(r["paths"], r["allocator"]) for r in runs] == [("both", "glibc")]
    assert "glibc's for both paths" in lines[1]


@pytest.mark.skipif(find_tcmalloc() is None, reason="tcmalloc not installed (make tcmalloc)")
def test_with_tcmalloc_each_repeat_of_each_path_runs_in_its_own_process_and_only_the_fast_path_has_it():
    """The fast path's figure is taken as training runs (tcmalloc preloaded), the stock path's as the
    zoo was first trained (glibc's): each child reports the allocator read from its own mappings."""
    args = _two_tiny_repeats("mini-bert", "tcmalloc")
    lines = []
    result = B.run(args, print_=lines.append)
    runs = result["processes"]["mini-bert"]
    assert [(r["paths"], r["allocator"]) for r in runs] == [
        ("stock", "glibc"), ("fast", "tcmalloc"), ("fast", "tcmalloc"), ("stock", "glibc")]  # the order alternates
    assert len({r["pid"] for r in runs}) == 4
    figures = result["families"]["mini-bert"]
    assert len(figures["stock"]["runs"]) == len(figures["fast"]["runs"]) == 2 and "ratio" in figures
    text = "\n".join(lines)
    assert "the fast path's processes tcmalloc" in text and "repeat 2 mini-bert: stock" in text
    assert "(glibc)" in text and "(tcmalloc)" in text
