"""Plant small bugs in ``models/``, one at a time, and see whether the unit tests catch them.

    .venv/bin/python -m scripts.mutation_check              # every mutant
    .venv/bin/python -m scripts.mutation_check rank fill    # mutants whose name contains a word
    .venv/bin/python -m scripts.mutation_check --list       # names, targets, test files

Each mutant is one exact text replacement in the core, found by a code snippet that must
occur exactly once in ``models/`` (so it still finds its target after code moves between
modules; "target not found" / "ambiguous target" is reported, never a crash). The tree is
copied once to a temporary folder and every mutant is planted there, so the working tree
is never modified, even on Ctrl-C. For each mutant only the unit test files that guard it
run (``-x``: the first failure is enough). A baseline run on the unmutated copy comes
first: a mutant only counts as caught when the same tests passed without it.

The first five are bugs a review planted by hand, each in a place no test looked.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", ".cache", "artifacts", ".pytest_cache", "__pycache__", ".hypothesis"}
LINKED = (".venv", ".cache")  # large and read-only for the tests: linked, not copied


@dataclass(frozen=True)
class Mutant:
    name: str
    find: str  # must occur exactly once in models/**/*.py
    replace: str
    tests: tuple[str, ...]  # unit test files that should catch it
    what: str


MUTANTS = (
    # --- five bugs planted by hand in a review --------------------------------------------------
    Mutant("whole-word-early-return",
           "if policy.mask == 1 or policy.random == 0:",
           "if policy.mask == 1 or policy.random == 0 or policy.whole_word:",
           ("tests/unit/pretraining/test_masking.py",),
           "whole-word masking stops before the random / kept replacements"),
    Mutant("rank-off-by-one",
           "ranks = (log_probs > true_lp[:, None]).sum(-1) + 1",
           "ranks = (log_probs >= true_lp[:, None]).sum(-1) + 1",
           ("tests/unit/pretraining/test_masking_lab.py",),
           "every rank in masked_lm_loss one too high, top-1 accuracy always 0"),
    Mutant("fill-in-continuation",
           'before = before.rstrip(" ")',
           "before = before",
           ("tests/unit/mlm/test_fill_mask.py",),
           "_fill_in leaves a space before a ## top guess"),
    Mutant("top1-agree-always",
           "len({w[0] for w in words}) == 1",
           "True",
           ("tests/unit/compare/test_side_by_side.py",),
           "MaskAgreement.top1_agree always true"),
    Mutant("continues-after-punctuation",
           "text[start].isalnum() and text[start - 1].isalnum())",
           "text[start - 1].isalnum())",
           ("tests/unit/compare/test_compare_every_family.py",),
           "pieces_that_continue counts a punctuation piece after a word as continuing it"),
    # --- our own ---------------------------------------------------------------------------
    Mutant("specials-selectable",
           "no_select = special_mask.bool()",
           "no_select = torch.zeros_like(special_mask, dtype=torch.bool)",
           ("tests/unit/pretraining/test_masking.py",),
           "[CLS] / [SEP] / padding can be selected for masking"),
    Mutant("random-share-unscaled",
           "random_scaled = policy.random / (1 - policy.mask)",
           "random_scaled = policy.random",
           ("tests/unit/pretraining/test_masking.py",),
           "the 10 % random share not rescaled to the 20 % left after [MASK]"),
    Mutant("word-ids-ignore-specials",
           "new_word = ~special & ((starts != prev_ends) | prev_special)",
           "new_word = ~special & (starts != prev_ends)",
           ("tests/unit/pretraining/test_masking.py",),
           "a word right after a special token joins the word before it"),
    Mutant("softmax-temperature",
           "probs = logits.softmax(dim=-1)  # (M, V)",
           "probs = (logits / 2).softmax(dim=-1)  # (M, V)",
           ("tests/unit/mlm/test_fill_mask.py",),
           "fill-mask probabilities from halved logits"),
    Mutant("prediction-token-raw",
           "Prediction(token=tokenizer.decode([tid])",
           "Prediction(token=r",
           ("tests/unit/mlm/test_fill_mask.py",),
           "a prediction shows the raw vocabulary entry, not the decoded token"),
    Mutant("loss-sum-not-mean",
           "loss=float(np.mean([r.nll for r in rows]))",
           "loss=float(np.sum([r.nll for r in rows]))",
           ("tests/unit/pretraining/test_masking_lab.py",),
           "the MLM loss summed over positions instead of averaged"),
    Mutant("static-redraws",
           "if draw is None or dynamic:",
           "if draw is None or not dynamic:",
           ("tests/unit/pretraining/test_masking_lab.py",),
           "static and dynamic masking swapped"),
    Mutant("statistics-share-of-eligible",
           "shares[name].append(counts[code] / chosen if chosen else np.nan)",
           "shares[name].append(counts[code] / eligible if chosen else np.nan)",
           ("tests/unit/pretraining/test_masking_lab.py",),
           "observed [MASK]/random/kept shares divided by all tokens, not the selected"),
    Mutant("mean-pool-ignores-mask",
           "weights = keep.to(hidden.dtype)  # (B, T, 1)",
           "weights = torch.ones_like(keep, dtype=hidden.dtype)  # (B, T, 1)",
           ("tests/unit/embeddings/test_pooling.py",),
           "mean pooling averages padding too"),
    Mutant("auc-ties-ignored",
           "if len(unique) < len(scores):",
           "if False:",
           ("tests/unit/embeddings/test_pooling.py",),
           "ROC AUC gives tied scores distinct ranks"),
    Mutant("rollout-reversed",
           "current = a @ current",
           "current = current @ a",
           ("tests/unit/attention/test_weights.py",),
           "attention rollout multiplies the layers in the wrong order"),
    Mutant("rollout-no-residual",
           "a = w[layer].mean(0) + np.eye(t)  # (T, T)",
           "a = w[layer].mean(0) + 0 * np.eye(t)  # (T, T)",
           ("tests/unit/attention/test_weights.py",),
           "attention rollout without the identity for the residual connection"),
    Mutant("normalise-keeps-case",
           "return piece.strip().lower()",
           "return piece.strip()",
           ("tests/unit/compare/test_side_by_side.py",),
           "compare's word normalisation keeps upper case"),
    Mutant("default-override-last",
           "preference.insert(0, override)",
           "preference.append(override)",
           ("tests/unit/registry/test_catalogue.py",),
           "ENCODER_LAB_DEFAULT loses to the built-in preference"),
    Mutant("set-device-ignored",
           '_device_override = None if name in (None, "auto") else name',
           "_device_override = None",
           ("tests/unit/runtime/test_loading.py",),
           "set_device forgets the device it was given"),
    Mutant("pair-offsets-shifted",
           'offsets=tuple((int(a), int(b)) for a, b in enc["offset_mapping"]),',
           'offsets=tuple((int(a) + len(text) * int(s), int(b) + len(text) * int(s))'
           ' for (a, b), s in zip(enc["offset_mapping"], enc["token_type_ids"])),',
           ("tests/unit/runtime/test_tokenization.py",),
           "a pair's second-text offsets counted from the start of the first text"),
    Mutant("text-limit-too-low",
           "if len(text) > MAX_TEXT_CHARS:",
           "if len(text) > 40:",
           ("tests/unit/test_properties.py",),
           "every text over 40 characters refused (a valid input gets only an error)"),
    # --- the retrieval report and the pre-training heads ----------------------------------------
    Mutant("report-dot-on-unit-vectors",
           "raw = _cached_raw(model_key, pooling, sentences)",
           "raw = vectors",
           ("tests/unit/embeddings/test_retrieval.py",),
           "retrieval_report's dot product on the normalised corpus vectors (so it equals the cosine)"),
    Mutant("paraphrase-finds-itself",
           "np.fill_diagonal(scores[:, :len(own)], -np.inf)  # a query never finds itself",
           "pass",
           ("tests/unit/embeddings/test_retrieval.py",),
           "paraphrase recall counts a query finding itself"),
    Mutant("replaced-seed-unchecked",
           'seed = check_int(seed, "seed", 0, 2**31 - 1)  # torch',
           "seed = seed  # torch",
           ("tests/unit/test_properties.py",),
           "detect_replaced passes any seed to torch's generator (2**64 crashes it)"),
    # --- the speed paths -----------------------------------------------------------------------
    Mutant("onednn-drops-bias",
           "return _linear_op(x.contiguous(), weight, linear.bias)",
           "return _linear_op(x.contiguous(), weight, None)",
           ("tests/unit/runtime/test_onednn.py",),
           "the oneDNN path forgets the linear layers' bias"),
    Mutant("onednn-under-gradients",
           "if (not getattr(_state, \"on\", False) or torch.is_grad_enabled() or x.device.type != \"cpu\"",
           "if (not getattr(_state, \"on\", False) or x.device.type != \"cpu\"",
           ("tests/unit/runtime/test_onednn.py",),
           "the oneDNN path also runs where gradients are needed (attribution, training)"),
    Mutant("one-row-projection-returns-the-pad",
           "return out[:, :count].T.reshape(*hidden.shape[:-1], out.shape[0])",
           "return out[:, -count:].T.reshape(*hidden.shape[:-1], out.shape[0])",
           ("tests/unit/mlm/test_fill_mask.py",),
           "one masked position gets the zero pad row's logits (the bias alone)"),
)


def _copy_tree(dest: Path) -> None:
    def ignore(folder, names):
        return [n for n in names if n in SKIP_DIRS or (Path(folder) == REPO and n in LINKED)]

    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    for name in LINKED:
        if (REPO / name).exists():
            (dest / name).symlink_to((REPO / name).resolve())


def _locate(tree: Path, mutant: Mutant) -> tuple[Path | None, str]:
    hits = [(p, p.read_text(encoding="utf-8").count(mutant.find)) for p in sorted((tree / "models").rglob("*.py"))]
    hits = [(p, n) for p, n in hits if n]
    if not hits:
        return None, "target not found"
    if len(hits) > 1 or hits[0][1] > 1:
        return None, "ambiguous target (" + ", ".join(f"{p.relative_to(tree)} x{n}" for p, n in hits) + ")"
    return hits[0][0], str(hits[0][0].relative_to(tree))


def _test_env(tree: Path) -> dict:
    """The environment of every run. Where the suite trains a tiny test zoo keyed by a hash
    of the training code (tests/zoo_setup.py, which hashes models/pretraining/masking.py too), the zoo
    of the unmutated tree is prepared once and shared, so no mutant retrains it."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if (tree / "tests" / "zoo_setup.py").is_file() and "ENCODER_LAB_ZOO_DIR" not in env:
        found = subprocess.run(
            [sys.executable, "-c", "from zoo_setup import ensure_test_zoo; print(ensure_test_zoo())"],
            cwd=tree, env=dict(env, PYTHONPATH="tests"), capture_output=True, text=True,
        )
        if found.returncode == 0 and found.stdout.strip():
            env["ENCODER_LAB_ZOO_DIR"] = found.stdout.strip().splitlines()[-1]
    return env


def _pytest(tree: Path, tests: list[str], timeout_s: int, env: dict) -> tuple[str, str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header",
           "-o", "addopts=", *tests]
    try:
        done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    tail = (done.stdout + done.stderr).strip().splitlines()
    last = tail[-1] if tail else ""
    return {0: "passed", 1: "failed"}.get(done.returncode, f"error (exit {done.returncode})"), last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only mutants whose name contains one of these")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per pytest run")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.names or any(n in m.name for n in args.names)]
    if args.list:
        for m in chosen:
            print(f"{m.name:30} {', '.join(m.tests):40} {m.what}")
        return 0

    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="encoder-lab-mutants-") as tmp:
        tree = Path(tmp) / "tree"
        _copy_tree(tree)
        env = _test_env(tree)
        files = sorted({t for m in chosen for t in m.tests if (tree / t).is_file()})
        print(f"baseline: {len(files)} test file(s) on the unmutated copy ...", flush=True)
        baseline = {}
        for f in files:
            baseline[f], last = _pytest(tree, [f], args.timeout, env)
            print(f"  {f}: {baseline[f]}  {last}", flush=True)
        for m in chosen:
            target, where = _locate(tree, m)
            tests = [t for t in m.tests if (tree / t).is_file()]
            if target is None:
                rows.append((m.name, where, "-", m.what))
            elif not tests:
                rows.append((m.name, where, "no test file", m.what))
            elif any(baseline[t] != "passed" for t in tests):
                rows.append((m.name, where, "baseline fails", m.what))
            else:
                original = target.read_text(encoding="utf-8")
                started = time.monotonic()
                try:
                    target.write_text(original.replace(m.find, m.replace), encoding="utf-8")
                    outcome, last = _pytest(tree, tests, args.timeout, env)
                finally:
                    target.write_text(original, encoding="utf-8")
                verdict = {"failed": "CAUGHT", "passed": "SURVIVED"}.get(outcome, f"CAUGHT? ({outcome})")
                rows.append((m.name, where, verdict, m.what))
                print(f"  {m.name}: {verdict} in {time.monotonic() - started:.0f}s  ({last})", flush=True)

    print()
    print(f"| mutant | where | result | planted bug |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    planted = [r for r in rows if r[2] not in ("-", "no test file", "baseline fails")]
    caught = [r for r in planted if r[2].startswith("CAUGHT")]
    survived = [r for r in planted if r[2] == "SURVIVED"]
    print(f"\nplanted {len(planted)}, caught {len(caught)}, survived {len(survived)}"
          f", not planted {len(rows) - len(planted)}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
