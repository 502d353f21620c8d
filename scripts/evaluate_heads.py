"""Task heads and retrieval on one encoder: the figures the README gives for them.

    python -m scripts.evaluate_heads [--model minilm-l6] [--epochs 30] [--seed 0] [--threads 2]
                                     [--queries 200] [--k 10] [--no-retrieval] [--baselines-only]

Public API only (``models``): a probe on the last layer (``train_classifier``, task
"source", mean pooling) with its head and body parameter counts; a probe on every layer
(``probe_layers``) for source/mean, source/cls, supersense/mean and truecase (one label per
word); the overfitting lesson (8 training sentences, 60 epochs, seed 1); the entities and
sentiment probes beside their baselines (``--baselines-only``: those alone); and
``retrieval_report`` for mean and [CLS] pooling (ANN recall@k against exact search,
dot-product vs cosine top-k, vector lengths, paraphrase recall). Accuracies are on each
task's fixed validation split (``data/tasks/``), never the training one. The latencies it
prints are this machine's at that moment, for information: not a benchmark.
"""

from __future__ import annotations

import argparse


import torch

from models import probe_layers, retrieval_report, train_classifier

PROBES = (("source", "mean"), ("source", "cls"), ("supersense", "mean"), ("truecase", "mean"))
OVERFIT = {"task": "source", "pooling": "mean", "epochs": 60, "train_size": 8, "seed": 1}


def _accuracies(values) -> str:
    return " ".join(f"{v:.3f}" for v in values)


def heads(model: str, epochs: int, seed: int) -> None:
    r = train_classifier(model, "source", pooling="mean", epochs=epochs, seed=seed)
    print(f"probe, last layer (layer {r.layer}), task source, mean pooling, {r.epochs} epochs, seed {r.seed}:")
    print(f"  validation {r.final_validation_accuracy:.1%} ({r.validation_units} sentences) vs majority "
          f"{r.majority_baseline:.1%}; train {r.train_accuracy[-1]:.1%}")
    print(f"  head {r.head_parameters:,} parameters vs body {r.body_parameters:,}")
    print(f"probe_layers, validation accuracy per layer (0 = input embeddings), {epochs} epochs, seed {seed}:")
    for task, pooling in PROBES:
        p = probe_layers(model, task, pooling=pooling, epochs=epochs, seed=seed)
        print(f"  {task}/{p.pooling}: {_accuracies(p.validation_accuracy)} (majority {p.majority_baseline:.3f})")
    o = train_classifier(model, OVERFIT["task"], pooling=OVERFIT["pooling"], epochs=OVERFIT["epochs"],
                         train_size=OVERFIT["train_size"], seed=OVERFIT["seed"])
    print(f"overfitting: {o.train_examples} training sentences, {o.epochs} epochs, seed {o.seed}:")
    print(f"  train accuracy epoch 1 {o.train_accuracy[0]:.1%}, last {o.train_accuracy[-1]:.1%}; validation "
          f"epoch 1 {o.validation_accuracy[0]:.1%}, last {o.validation_accuracy[-1]:.1%} "
          f"(majority {o.majority_baseline:.1%})")


def baselines(model: str, epochs: int, seed: int) -> None:
    """The entities and sentiment probes (last layer; sentiment mean-pooled) beside their baselines."""
    for task in ("entities", "sentiment"):
        r = train_classifier(model, task, pooling="mean", epochs=epochs, seed=seed)
        s = r.scores
        print(f"{task}, probe on layer {r.layer}, {r.epochs} epochs, seed {r.seed}, held out: {s.metric}")
        for name, values in (("trained head", s.model), *s.baselines):
            print(f"  {name:<30} " + "  ".join(f"{row} {v:.1%}" for row, v in zip(s.rows, values)))
        print("  held out (count)               " + "  ".join(f"{row} {n}" for row, n in zip(s.rows, s.support)))


def retrieval(model: str, k: int, queries: int) -> None:
    for pooling in ("mean", "cls"):
        r = retrieval_report(model, k=k, pooling=pooling, queries=queries)
        low, median, high = r.norm_spread
        print(f"retrieval_report, {pooling} pooling: {r.corpus_size:,} sentences, {r.queries} queries, k={r.k}")
        print(f"  ANN recall@{r.k} vs exact {r.ann_recall:.3f}; dot-product top-{r.k} overlap with cosine "
              f"{r.dot_overlap:.1%}; norms min/median/max {low:.2f}/{median:.2f}/{high:.2f}")
        print(f"  latency per query (this machine now, not a benchmark): exact {r.exact_ms:.3f} ms, "
              f"ANN {r.ann_ms:.3f} ms")
    recall = ", ".join(f"{p} {v:.1%}" for p, v in r.pooling_recall.items())
    print(f"paraphrase recall@{r.k} ({r.pooling_queries} queries): {recall}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-l6", help="a registry encoder (default minilm-l6)")
    parser.add_argument("--epochs", type=int, default=30, help="probe epochs (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--queries", type=int, default=200, help="retrieval_report queries (10-2000)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--no-retrieval", action="store_true", help="the heads only")
    parser.add_argument("--baselines-only", action="store_true",
                        help="only the entities and sentiment probes beside their baselines")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    baselines(args.model, args.epochs, args.seed)
    if args.baselines_only:
        return 0
    heads(args.model, args.epochs, args.seed)
    if not args.no_retrieval:
        retrieval(args.model, args.k, args.queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
