"""One step of each family's twist, with its numbers, from ``forward_steps``.

    python -m scripts.inside_twists [--text TEXT] [--layer 1] [--head 0]

For every model of the mini zoo (and the embedded BERTs): the family's own step(s) at one
layer and head, the checks against the model (largest absolute error), and the MLM
gradient's finite-difference check. Numbers from the models on this machine; the zoo's
weights are the project's own miniatures (see weights/zoo/*/MODEL_CARD.md).
"""

from __future__ import annotations

import argparse

import numpy as np

from models import forward_steps, get_spec, mlm_gradients

KEYS = ("mini-bert", "mini-roberta", "mini-distilbert", "mini-albert", "mini-electra", "mini-deberta",
        "mini-modernbert", "minilm-mlm", "splade-tiny", "minilm-l6")
TEXT = ("The old mill by the [MASK] turned slowly in the evening light, and the miller counted "
        "the sacks of grain that the farmers had brought down from the hills that week.")
GRAD_TEXT = "The cat sat on the mat near the old house."


def twist_lines(result) -> list[str]:
    lines = list(result.facts)
    if result.family == "deberta-v2":
        i, j = 1, 2
        terms = {t: float(result.step(f"deberta_{t}").value[i, j]) for t in ("c2c", "c2p", "p2c")}
        score = float(result.step("scaled_scores").value[i, j])
        lines.append(f"(i={i}, j={j}): c2c {terms['c2c']:+.5f} + c2p {terms['c2p']:+.5f} + p2c {terms['p2c']:+.5f}"
                     f" = {sum(terms.values()):+.5f}; score used by softmax {score:+.5f}; relative bucket "
                     f"δ = {int(result.step('deberta_relative_positions').value[i, j])}")
    if result.family == "modernbert":
        q0, q = result.step("query_before_rotation").value, result.step("query").value
        t = min(3, len(q) - 1)
        lines.append(f"token {t}: query before rotation [{q0[t, 0]:+.4f}, {q0[t, result.d_head // 2]:+.4f}] -> after "
                     f"[{q[t, 0]:+.4f}, {q[t, result.d_head // 2]:+.4f}] (pair 0); |q| kept: "
                     f"{np.linalg.norm(q0[t]):.4f} vs {np.linalg.norm(q[t]):.4f}")
    if result.family == "roberta":
        lines.append(f"position ids: {result.step('roberta_position_ids').value[:5].astype(int).tolist()} …")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--layer", type=int, default=1)
    parser.add_argument("--head", type=int, default=0)
    args = parser.parse_args(argv)
    for key in KEYS:
        result = forward_steps(key, args.text, layer=args.layer, head=args.head)
        worst = max(result.checks, key=lambda c: (not c.ok, c.max_abs_error))
        print(f"== {key} ({result.family}, {result.network}; {len(result.tokens)} tokens, layer {result.layer}, "
              f"head {result.head})")
        print(f"   checks: {len(result.checks)}, all within tolerance: {all(c.ok for c in result.checks)}; "
              f"worst {worst.name} {worst.max_abs_error:.2e} (tolerance {worst.tolerance:.0e})")
        for line in twist_lines(result):
            print(f"   * {line}")
        if get_spec(key).has_mlm_head:
            g = mlm_gradients(key, GRAD_TEXT)
            print(f"   gradient: masked {g.masked} mean |dL/de| {g.masked_mean_norm:.4g}, unmasked "
                  f"{g.unmasked_mean_norm:.4g}; max |dL/dlogits| unmasked "
                  f"{max(float(g.logit_grad_norms[i]) for i in g.unmasked):.1g}; finite difference "
                  f"{g.fd_autograd:.6g} vs {g.fd_estimate:.6g} (rel {g.fd_relative_error:.1e})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
