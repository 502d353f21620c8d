"""Print the live-training views' targets through the public API: sentence encoders, pair and
span heads, distillation. Each figure says what was run; times are wall-clock on this machine.

    python -m scripts.evaluate_sentence [--only sentence,pair,span,distill] [--threads 2]

Targets: held-out separation ROC AUC rises by >= 0.05 on mini-bert and does not fall on
minilm-l6 (each run under a minute on two cores); pair head >= 10 points above its majority
baseline; span head exact match >= 20 points above both baselines on held-out entities;
distillation: which of the two students won, by how much.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from models import answer_span, distill, train_pair_classifier, train_sentence_encoder, train_span_head

PARTS = ("sentence", "pair", "span", "distill")


def _mark(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def sentence(args) -> None:
    for key in ("mini-bert", "minilm-l6"):
        started = time.perf_counter()
        r = train_sentence_encoder(key, loss="triplet", steps=args.sentence_steps, seed=0, max_seconds=args.seconds)
        wall = time.perf_counter() - started
        target = r.auc_gain >= 0.05 if key == "mini-bert" else r.auc_gain >= 0
        print(f"sentence encoder {key}: {r.steps_done} steps ({r.stopped or 'all'}), training {r.training_seconds:.0f} s, "
              f"with the scoring before and after {r.seconds:.0f} s, call {wall:.0f} s")
        print(f"  held-out WordNet synsets ({r.heldout_groups}): ROC AUC {r.before.auc:.3f} -> {r.after.auc:.3f} "
              f"({r.auc_gain:+.3f}; target {'>= +0.05' if key == 'mini-bert' else '>= 0'}: {_mark(target)}), "
              f"gap {r.before.gap:.3f} -> {r.after.gap:.3f}")
        print(f"  Embeddings tab's sentence sets: ROC AUC {r.tab_before.auc:.3f} -> {r.tab_after.auc:.3f} "
              f"({r.tab_after.auc - r.tab_before.auc:+.3f})")
        print(f"  loss {r.train_loss[0]:.3f} (step 1) -> {sum(r.train_loss[-20:]) / len(r.train_loss[-20:]):.3f} "
              f"(mean of the last 20); key {r.encoder_key}")


def pair(args) -> None:
    r = train_pair_classifier(args.pair_model, "definition-match", pooling="cls", freeze=True, seed=0, max_seconds=300)
    gain = r.final_validation_accuracy - r.majority_baseline
    print(f"pair head {args.pair_model} / definition-match (probe on [CLS], {r.epochs} epochs, {r.seconds:.0f} s): "
          f"validation {r.final_validation_accuracy:.1%} vs majority {r.majority_baseline:.1%} "
          f"({gain * 100:+.1f} points; target >= +10: {_mark(gain >= 0.10)})")
    print(f"  head {r.head_parameters:,} parameters = {r.reference_head} {r.reference_parameters:,}; "
          f"body {r.body_parameters:,}")


def span(args) -> None:
    r = train_span_head(args.span_model, steps=args.span_steps, seed=0, max_seconds=300)
    em, fnp, lw = r.scores.exact_match, r.first_noun_phrase.exact_match, r.longest_word.exact_match
    ok = em - fnp >= 0.20 and em - lw >= 0.20
    print(f"span head {args.span_model}: {r.steps_done} steps ({r.stopped or 'all'}), {r.seconds:.0f} s; "
          f"{r.validation_questions} held-out questions (entities never trained on)")
    print(f"  exact match {em:.1%}, F1 {r.scores.f1:.1%}; first noun phrase EM {fnp:.1%} F1 "
          f"{r.first_noun_phrase.f1:.1%}; longest word EM {lw:.1%} F1 {r.longest_word.f1:.1%} "
          f"(target EM >= +20 points over both: {_mark(ok)})")
    for source, (n, s_em, s_f1) in r.per_source.items():
        print(f"  {source}: {n} questions, EM {s_em:.1%}, F1 {s_f1:.1%}")
    print(f"  head {r.head_parameters:,} parameters = {r.reference_head} {r.reference_parameters:,}")
    a = answer_span(r.head_id, "What is the capital of Norway?", "Norway lies in Northern Europe, and its capital is Oslo.")
    print(f"  answer_span example: {a.answer!r} (P = {a.score:.2f})")


def distillation(args) -> None:
    r = distill(args.teacher, args.student, steps=args.distill_steps, alpha=0.5, temperature=2.0, seed=0,
                max_seconds=min(300, args.seconds * 4))
    print(f"distillation {args.teacher} -> {r.student_shape} ({r.student_parameters:,} parameters), "
          f"{r.steps_done} steps each ({r.stopped or 'all'}), {r.seconds:.0f} s")
    print(f"  held-out masked-token accuracy: soft targets + MLM {r.distilled.final_accuracy:.1%}, MLM alone "
          f"{r.mlm_only.final_accuracy:.1%}; teacher {r.teacher_accuracy:.1%}; held-out MLM loss "
          f"{r.distilled.final_loss:.3f} vs {r.mlm_only.final_loss:.3f}")
    print(f"  winner (held-out MLM loss): {r.winner} by {abs(r.loss_gain):.3f} nats per masked token; accuracy "
          f"{r.accuracy_gain * 100:+.1f} points (soft targets - MLM alone)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(PARTS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60, help="time limit of each sentence-encoder run")
    parser.add_argument("--sentence-steps", type=int, default=300)
    parser.add_argument("--pair-model", default="minilm-l6")
    parser.add_argument("--span-model", default="minilm-l6")
    parser.add_argument("--span-steps", type=int, default=150)
    parser.add_argument("--teacher", default="mini-bert")
    parser.add_argument("--student", default="2x64")
    parser.add_argument("--distill-steps", type=int, default=200)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    chosen = [p for p in args.only.split(",") if p]
    bad = [p for p in chosen if p not in PARTS]
    if bad:
        parser.error(f"unknown part(s) {bad}; choose from {PARTS}")
    runs = {"sentence": sentence, "pair": pair, "span": span, "distill": distillation}
    for part in chosen:
        runs[part](args)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
