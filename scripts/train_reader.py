"""Train the shipped span reader: a start/end head over the frozen embedded ``minilm-l6``.

The encoder is never changed: its last-layer states of ``[CLS] question [SEP] context [SEP]``
are computed once for the templated questions of ``data/tasks/spans.tsv`` (training split:
countries, elements and WordNet nouns, held out by entity; ``scripts/build_spans.py``), then a
``Linear(384, 2)`` (transformers' ``qa_outputs``) is trained on them with AdamW. Scored as
``train_span_head`` is (exact match and token F1 on the held-out entities), and through
``retrieve_then_read`` on the questions of ``STUDENT_QUESTIONS`` (written by this project's
developers in a student's words, not the templates'; every country is held out of training).

Writes ``weights/span-reader/``: ``head.safetensors`` (float32, 770 numbers), ``record.json``
and ``MODEL_CARD.md``. Run under ``nice -n 19``; a few minutes on 2 shared CPU cores.

Usage: python -m scripts.train_reader [--epochs 40] [--seed 0] [--out weights/span-reader]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from models import get_spec
from models.runtime.loading import load_model
from models.tasks import span_heads as sh
from models.tasks.reading import DEFAULT_ENCODER, READER_DIR

# (question, country, capital): phrased as a student would, never a template of spans.tsv
STUDENT_QUESTIONS = (
    ("Which city does Kenya's government work from?", "Kenya", "Nairobi"),
    ("What is Iceland's capital called?", "Iceland", "Reykjavik"),
    ("In which city is the government of Ecuador based?", "Ecuador", "Quito"),
    ("If I flew to the capital of Tunisia, which city would I land in?", "Tunisia", "Tunis"),
    ("What's the main city where Honduras is governed from?", "Honduras", "Tegucigalpa"),
)
LEARNING_RATE = 1e-2
BATCH = 32


def states(loaded, examples) -> tuple[torch.Tensor, torch.Tensor, object]:
    """(N, T, d) last-layer states, (N, T) context mask, the encoding: one frozen pass."""
    enc = sh.encode_questions(loaded, [e.question for e in examples], [e.context for e in examples])
    rows = list(range(len(examples)))
    batch, context = sh.span_batch(enc, rows, loaded.tokenizer.pad_token_id or 0, loaded.device)
    parts = []
    with torch.inference_mode():
        for start in range(0, len(rows), 64):
            part = {k: v[start:start + 64] for k, v in batch.items()}
            parts.append(loaded.model(**part).last_hidden_state.float())
    return torch.cat(parts).clone(), context.clone(), enc


def train(hidden, context, starts, ends, epochs: int, seed: int) -> tuple[torch.nn.Linear, list[float]]:
    torch.manual_seed(seed)
    head = torch.nn.Linear(hidden.shape[-1], 2)
    optimiser = torch.optim.AdamW(head.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    rng, curve = np.random.default_rng(seed), []
    starts, ends = torch.tensor(starts), torch.tensor(ends)
    for _ in range(epochs):
        for rows in np.array_split(rng.permutation(len(hidden)), max(1, len(hidden) // BATCH)):
            logits = head(hidden[rows]).masked_fill(~context[rows, :, None], -1e4)  # (B, T, 2)
            loss = (F.cross_entropy(logits[..., 0], starts[rows]) + F.cross_entropy(logits[..., 1], ends[rows])) / 2
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        curve.append(float(loss.detach()))
    return head, curve


def predict(head, hidden, context, enc, examples) -> list[str]:
    with torch.no_grad():
        logits = head(hidden).masked_fill(~context[..., None], float("-inf"))
    return [sh.span_text(enc, i, *sh.best_span(logits[i, :, 0], logits[i, :, 1]), ex.context)[0]
            for i, ex in enumerate(examples)]


def student_check() -> list[dict]:
    from models import retrieve_then_read

    out = []
    for question, country, capital in STUDENT_QUESTIONS:
        r = retrieve_then_read(question, k=3)
        out.append({"question": question, "country": country, "expected": capital, "answer": r.answer,
                    "correct": sh.normalise_answer(r.answer) == sh.normalise_answer(capital),
                    "passage": r.passages[r.answer_passage - 1].text, "score": round(r.score, 3)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=READER_DIR)
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    started = time.time()
    loaded = load_model(get_spec(DEFAULT_ENCODER), head="base")
    data = sh.load_spans()
    held_out = {ex.entity for ex in data.validation}
    assert all(country in held_out for _, country, _ in STUDENT_QUESTIONS), "a student question's country is trained on"
    hidden, context, enc = states(loaded, data.train)
    starts, ends = sh.span_targets(enc, data.train)
    frozen_pass = time.time() - started
    head, curve = train(hidden, context, starts, ends, args.epochs, args.seed)
    v_hidden, v_context, v_enc = states(loaded, data.validation)
    predicted = predict(head, v_hidden, v_context, v_enc, data.validation)
    gold = [ex.answer for ex in data.validation]
    scores = sh.score_answers(predicted, gold)
    per_source = {}
    for source in sorted({ex.source for ex in data.validation}):
        idx = [i for i, ex in enumerate(data.validation) if ex.source == source]
        s = sh.score_answers([predicted[i] for i in idx], [gold[i] for i in idx])
        per_source[source] = {"questions": len(idx), "exact_match": round(s.exact_match, 3), "f1": round(s.f1, 3)}
    args.out.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    save_file({"weight": head.weight.detach().contiguous(), "bias": head.bias.detach().contiguous()},
              str(args.out / "head.safetensors"))
    record = {
        "encoder": DEFAULT_ENCODER, "frozen": True, "head": "a Linear(384, 2), a start and an end logit per token",
        "parameters": sum(p.numel() for p in head.parameters()), "epochs": args.epochs, "batch": BATCH,
        "learning_rate": LEARNING_RATE, "optimiser": "AdamW, weight decay 0.01", "seed": args.seed,
        "train_questions": len(data.train), "validation_questions": len(data.validation),
        "loss_per_epoch": [round(x, 4) for x in curve],
        "validation": {"exact_match": round(scores.exact_match, 3), "f1": round(scores.f1, 3), "per_source": per_source},
        "frozen_pass_seconds": round(frozen_pass, 1), "seconds": None,
        "command": f"nice -n 19 python -m scripts.train_reader --epochs {args.epochs} --seed {args.seed}",
        "machine": "2 shared CPU cores, float32, torch threads 2",
    }
    _shipped_head_reset()
    record["student_questions"] = student_check() if args.out == READER_DIR else []
    record["seconds"] = round(time.time() - started, 1)
    (args.out / "record.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (args.out / "MODEL_CARD.md").write_text(card(record), encoding="utf-8")
    print(json.dumps({k: record[k] for k in ("validation", "student_questions", "seconds")}, indent=1))
    return 0


def _shipped_head_reset() -> None:
    from models.tasks import reading

    reading._shipped_head.cache_clear()  # the head just written, not one read before


def card(r: dict) -> str:
    v = r["validation"]
    right = sum(q["correct"] for q in r["student_questions"])
    lines = [
        "# span-reader: a start/end head over frozen minilm-l6", "",
        f"The default reader of `retrieve_then_read`: {r['head']} ({r['parameters']} parameters) over the "
        "embedded `minilm-l6` (sentence-transformers' all-MiniLM-L6-v2), which stays frozen: it reads "
        "`[CLS] question [SEP] passage [SEP]` and the head picks the answer's first and last token.", "",
        "**Trained on** the training split of `data/tasks/spans.tsv` "
        f"({r['train_questions']:,} templated questions about countries, chemical elements and WordNet nouns; "
        "`scripts/build_spans.py`), held out by entity: no country, element or noun of the validation split is "
        "trained on.", "",
        f"**How, how long**: `{r['command']}`: one frozen pass over the questions "
        f"({r['frozen_pass_seconds']:.0f} s), then {r['epochs']} epochs of AdamW (lr {r['learning_rate']:g}, "
        f"batches of {r['batch']}, seed {r['seed']}) on the stored states; {r['seconds']:.0f} s in all on "
        f"{r['machine']} (shared with other work).", "",
        f"**Held-out scores** ({r['validation_questions']} questions about entities never trained on): exact match "
        f"{v['exact_match']:.1%}, token F1 {v['f1']:.1%}; per source: "
        + "; ".join(f"{s} {p['exact_match']:.1%} / {p['f1']:.1%} ({p['questions']})" for s, p in v["per_source"].items())
        + ".", "",
    ]
    if r["student_questions"]:
        lines += [f"**Questions in a student's words** (written by the project's developers; every country held "
                  f"out of training), through `retrieve_then_read(question, k=3)`: {right} of "
                  f"{len(r['student_questions'])} answered with the capital.", ""]
        lines += [f"- {q['question']} → **{q['answer']}** ({'right' if q['correct'] else 'wrong'}; from "
                  f"\"{q['passage']}\")" for q in r["student_questions"]]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
