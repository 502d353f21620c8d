"""The model card of the zoo's decoder twin, from the record its run wrote."""

from __future__ import annotations

from ..registry.zoo_entries import recipe_of, zoo_folder
from .cards import corpus_lines, run_line


def prefix_line(record: dict) -> str | None:
    """What a run that stopped before its budget saw: its exact tokens, and where the schedule was."""
    cfg = record["config"]
    if record["tokens"] >= cfg["tokens"] * 0.99:
        return None
    return (f"**A prefix of its run.** These weights are the run's checkpoint at {record['tokens']:,} training "
            f"tokens ({record['steps']:,} steps) of the {cfg['tokens']:,}-token schedule it was started on "
            f"({record['tokens'] / cfg['tokens']:.1%}): the learning rate had not decayed to zero, and its twin "
            "saw the whole budget. Every score below is of this checkpoint.")


def decoder_card(key: str, record: dict) -> str:
    cfg, shape, twin = record["config"], record["config"]["shape"], record["twin"]["family"]
    size = sum(p.stat().st_size for p in zoo_folder(key).rglob("*.safetensors")) / 2**20
    held, uni, story = record["heldout"], record["unigram"], record["story"]
    lines = [
        f"# `{key}`: the mini zoo's storyteller, a miniature decoder trained by Encoder Lab",
        "",
        f"**What it is.** {recipe_of(key)}; trained **from random initialisation** by this project, with "
        f"transformers' class of Ettin's decoders. It is `{twin}`'s twin: "
        f"{record['twin']['shares']}. Only the objective differs: {twin} fills masked pieces with both sides "
        "in view, this model gives the next piece from the pieces before it.",
        f"{shape['layers']} layers, {shape['hidden']} wide, {shape['heads']} heads, feed-forward {shape['ffn']} "
        f"(GeGLU), vocabulary {shape['vocab']:,}, sequences of at most {shape['max_len']} tokens; global (causal) "
        f"attention in layers {', '.join(map(str, range(0, shape['layers'], 2)))}, a local window in layers "
        f"{', '.join(map(str, range(1, shape['layers'], 2)))} (each token sees itself and the "
        f"{shape['modernbert_window'] // 2 - 1} before it: half of ModernBERT's window of "
        f"{shape['modernbert_window']}, which reaches 16 each side). {record['parameters']['model']:,} parameters; "
        f"float16 safetensors, {size:.1f} MiB.",
        "",
        f"**Tokenizer.** `{twin}`'s, as shipped (`weights/zoo/{twin}/tokenizer.json`): the same vocabulary "
        "exactly. A text is read as `[CLS]` then its pieces, as in training.",
        "",
        f"**How it was trained** (`python -m {record.get('script', 'scripts.zoo train')} --families {key}`, "
        "`models/zoo/train.py`). Next-token prediction (causal LM): every real piece of a sequence after the "
        "first is a target, predicted from the pieces before it; no masking. The same packed sequences of "
        f"consecutive corpus sentences, in the same order, as {twin}:",
        run_line(record),
        *filter(None, [prefix_line(record)]),
        "",
        "**Scores** (the held-out split `data/heldout.txt` without its last 400 lines, never trained on).",
        f"- Held-out next-piece loss: **{held['piece_loss']:.3f} nats** per piece over {held['pieces']:,} pieces "
        f"(each from the pieces before it); the next piece is its top-1 guess {held['piece_top1']:.1%} of the time.",
        f"- The word-frequency baseline on the same pieces (each from its frequency in the training split): "
        f"{uni['piece_loss']:.3f} nats, top-1 {uni['piece_top1']:.1%} (always \"{uni['top_guess']}\"). This model: "
        f"**{uni['piece_loss'] - held['piece_loss']:.2f} nats per piece below it**.",
        f"- \"{story['prompt']}\" continued: greedy \"{story['greedy'].strip()}\"; sampled "
        f"({story['sampling']}): " + "; ".join(f"\"{s.strip()}\"" for s in story["sampled"]) + ".",
        "",
        f"**Learning curve** (held-out next-piece loss on the tuning split's {cfg['eval_sentences']} sentences):",
        "",
        "| tokens | next-piece loss | next-piece top-1 | train loss |",
        "|---|---|---|---|",
        *[f"| {p['tokens']:,} | {p['piece_loss']:.3f} | {p['piece_top1']:.1%} | {p['train_loss']:.3f} |"
          for p in record["curve"]],
        "",
        *corpus_lines(record),
        "",
        f"**Limits.** A miniature: {record['tokens'] / 1e6:.1f} million training tokens on a CPU. It continues text "
        "with frequent words and local patterns; it is not a published decoder and knows little English.",
    ]
    return "\n".join(lines) + "\n"
