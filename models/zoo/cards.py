"""Model cards and the README table of the mini zoo, from the records the trainer wrote."""

from __future__ import annotations

import json
from pathlib import Path

from ..registry.zoo_entries import (DECODER_KEYS, PAST_BUDGET_KEYS, SCORE_NAME, TABLE_FAMILIES, ZOO_KEYS,
                                    detection_figures, past_budget_start, recipe_of, zoo_comparison, zoo_folder)

REPO_ROOT = Path(__file__).resolve().parents[2]

CLASS = {
    "mini-bert": "BertForPreTraining", "mini-roberta": "RobertaForMaskedLM",
    "mini-distilbert": "DistilBertForMaskedLM", "mini-albert": "AlbertForPreTraining",
    "mini-electra": "ElectraForPreTraining (discriminator) + ElectraForMaskedLM (generator/)",
    "mini-deberta": "DebertaV2ForMaskedLM", "mini-modernbert": "ModernBertForMaskedLM",
}

# What a family's run did that its recipe line alone does not say.
NOTES = {
    "mini-modernbert": (
        "No unpadding in this run: in transformers 5 ModernBERT unpads only inside its flash-attn "
        "attention path (flash-attn is not installed here); with PyTorch's SDPA on a CPU, as trained, "
        "each batch is padded to its longest sequence and the local window is a mask over full "
        "attention (16 tokens each side). Padding is kept out of the loss, and the MLM head runs at "
        "the masked positions only."),
}


# the locality start's third part, for the families with a projection between embeddings and layers
PROJECTION_STARTS = {
    "mini-albert": ", and the factorised embedding's mapping to the hidden width starts norm-preserving "
                   "(orthonormal columns, scaled) instead of transformers' N(0, 0.02)",
}

PRECISION = {"bf16": "bfloat16 autocast (the products in bfloat16; weights, optimiser and losses in float32)"}


def position_line(key: str, record: dict) -> str | None:
    """How the run started the family's positions, where the recipe changed it."""
    start = record["config"].get("position_init", "random")
    if start == "local" and key in TABLE_FAMILIES:
        return ("Positions: the locality start (`models/zoo/locality.py`). The learnt absolute table starts as "
                "sinusoids at twice the token embeddings' scale, and heads 0 and 1 of every layer start as "
                "previous- and next-token heads (their query and key weights fitted to read the position's sine "
                "and cosine)" + PROJECTION_STARTS.get(key, "") + "; every weight is then trained. With "
                "transformers' random start this family stayed on the word-frequency plateau "
                "(`python -m scripts.zoo plateau`; on a GPU, for 21.7 M tokens).")
    if start == "local" and key == "mini-distilbert":
        return "Positions: as its teacher's (mini-bert, locality start), copied with the teacher's layers."
    if start == "sinusoidal" and key in TABLE_FAMILIES:
        return "Positions: the learnt absolute table starts as sinusoids (still trained)."
    return None


def pair_reading(kind: str, found: dict[str, float]) -> str:
    """What the figures say the pair head reads, where they show it plainly ("" otherwise)."""
    same, other = found.get("sentences, same-source"), found.get("sentences, another-source")
    if kind == "nsp" and same is not None and other is not None and same < 0.6 <= other:
        return (" What this head reads is mostly the kind of text B is: when the random B is of the same kind "
                "(from elsewhere in the same source), it is near chance.")
    swapped = found.get("sentences, swapped")
    if kind == "sop" and swapped is not None and abs(swapped - 0.5) < 0.05:
        return " On these pairs the head is at chance: it has not learnt to read sentence order."
    return ""


def student_lines(record: dict) -> list[str]:
    """The pair head on held-out narrative pairs, and the detector on single-swap sentences
    (``python -m scripts.zoo objectives``), when the record has them."""
    lines = []
    if record.get("pair_narrative"):
        n = record["pair_narrative"]
        found = "; ".join(f"{k.replace('-', ' ')} {v:.1%}" for k, v in n["accuracy"].items())
        lines.append(f"- {record['pair_objective'].upper()} on {n['pairs']:,} held-out pairs of running text "
                     f"({', '.join(n['sources'])}), cut as BERT cuts (segments: A a chunk's first sentences, B the "
                     "rest) or one sentence each "
                     + ("(sentences); a random B from another source or from elsewhere in the same source: "
                        if record["pair_objective"] == "nsp" else "(sentences); half of them swapped: ")
                     + f"{found}; `python -m {n['script']}`." + pair_reading(record["pair_objective"], n["accuracy"]))
        if n.get("segments_b_ends_a_sentence"):
            ends = n["segments_b_ends_a_sentence"]
            negatives = record.get("nsp_negatives") or record.get("config", {}).get("nsp_negatives", "any")
            trained = ("BERT's cut, which this head trained on" if negatives == "any"
                       else "BERT's cut, not the pairs this head trained on")
            lines.append(f"- Cut as BERT cuts (A a chunk's first sentences, B the rest; a negative's B another source's "
                         f"chunk opening, cut to the positive's length: {trained}), B ends a sentence in "
                         f"{ends['positives']:.1%} of the positive pairs and {ends['negatives']:.1%} of the negatives: "
                         "a cue a head trained on such pairs can read without reading the story.")
    if record.get("swap_detection"):
        d = record["swap_detection"]
        sets = {"written": "sentences written for the project (`data/electra_swaps.json`)",
                "heldout": "held-out sentences with one word swapped for a word of another"}
        for name, f in d.items():
            if isinstance(f, dict) and name in sets:
                lines.append(f"- One plainly wrong word in {f['sentences']} {sets[name]}: ranked first by "
                             f"P(replaced) in **{f['first']:.1%}** (by chance {f['chance_first']:.1%}); ROC AUC "
                             f"of a word's P(replaced), swapped against the rest, {f['word_auc']:.3f}; "
                             f"`python -m {d['script']}`.")
    return lines


def card(key: str, record: dict, idea: str) -> str:
    cfg, shape = record["config"], record["config"]["shape"]
    folder = zoo_folder(key)
    size = sum(p.stat().st_size for p in folder.rglob("*.safetensors")) / 2**20
    masking = record["masking"]
    held = record["heldout"]
    generator = (f" This is the score of its {shape['electra_generator_hidden']}-wide generator: the "
                 "discriminator cannot fill masks.") if "generator" in record["parameters"] else ""
    lines = [
        f"# `{key}`: a miniature trained by Encoder Lab (not the published checkpoint)",
        "",
        f"**What it is.** `{CLASS[key]}` from transformers, trained **from random initialisation** by",
        f"this project: {idea}.",
        f"Shape shared by the whole zoo: {shape['layers']} layers (DistilBERT: half), {shape['hidden']} wide, "
        f"{shape['heads']} heads, feed-forward {shape['ffn']}, vocabulary {shape['vocab']:,}, sequences of at most "
        f"{shape['max_len']} tokens. {sum(record['parameters'].values()):,} parameters "
        f"({', '.join(f'{k}: {v:,}' for k, v in record['parameters'].items())}); float16 safetensors, {size:.1f} MiB.",
        "",
        f"**Tokenizer.** `{record['tokenizer_kind']}`, trained on the corpus's training split with the "
        "`tokenizers` library (`models/zoo/tokenizers.py`), saved with the family's transformers class.",
        "",
        f"**How it was trained** (`python -m {record.get('script') or ('scripts.zoo gpu' if record.get('budget') else 'scripts.zoo train')}`, `models/zoo/train.py`). "
        "The same corpus,",
        "seed, shape and number of training tokens as every other miniature:",
        run_line(record),
        f"Masking: {masking['rate']:.0%} of the tokens selected, {masking['mask']:.0%} [MASK] / "
        f"{masking['random']:.0%} random / {masking['keep']:.0%} kept, "
        + ("static (each example's masks drawn once from its own seed)" if record["static_masking"]
           else "dynamic (a fresh draw per batch)")
        + (f"; pair objective: {record['pair_objective'].upper()}" if record.get("pair_objective") else "")
        + (", its pairs whole sentences (half of them one each), a negative's B of the same source"
           if record.get("pair_objective") == "nsp"
           and cfg.get("nsp_negatives") == "same-source" else "")
        + "; the MLM head runs at the selected positions only.",
        *([NOTES[key]] if key in NOTES else []),
        *filter(None, [position_line(key, record)]),
        *([tuning_line(record)] if record.get("tuning") else []),
        *([f"Stopped at the run's wall-clock deadline after {record['tokens']:,} of {cfg['tokens']:,} tokens."]
          if record.get("stopped_at_deadline") else []),
        "",
        "**Scores.**",
        f"- Held-out whole-word top-1: **{held['word_top1']:.1%}** of {held['words']:,} words ({SCORE_NAME}; "
        "the held-out split `data/heldout.txt`, never trained on). Mean loss per masked piece "
        f"{held['piece_loss']:.3f} nats (depends on the tokenizer: not comparable across families).{generator}",
        f"- Everyday cloze (`data/everyday_cloze.json`, written for the project): an accepted answer among the "
        f"top 5 at the mask in {record['everyday']['hit_rate']:.0%} of {len(record['everyday']['items'])} sentences.",
    ]
    if record.get("pair_heldout"):
        p = record["pair_heldout"]
        lines.append(f"- {record['pair_objective'].upper()} on {p['pairs']:,} held-out pairs (2 % of the corpus's "
                     f"chunks, never trained on): **{p['accuracy']:.1%}** (majority class {p['majority']:.1%}).")
        if record.get("pair_reference"):
            ref = record["pair_reference"]
            lines.append(f"- For reference, {ref['model']} on the same held-out pairs: {ref['accuracy']:.1%} "
                         f"({ref['running_text_accuracy']:.1%} of the {ref['running_text_pairs']:,} cut from running "
                         f"text); `python -m {ref['script']}`.")
    if record.get("rtd_heldout", {}).get("replaced"):
        r = record["rtd_heldout"]
        auc = f"ROC AUC of P(replaced) **{r['roc_auc']:.3f}**; " if "roc_auc" in r else ""
        lines.append(f"- Replaced-token detection on held-out chunks corrupted by its generator: {auc}mean P(replaced) "
                     f"{r['replaced_mean_p']:.2f} at the {r['replaced']:,} replaced tokens and "
                     f"{r['original_mean_p']:.2f} at the {r['original']:,} original ones; recall at 0.5 "
                     f"{r['replaced_recall']:.1%}, specificity {r['original_specificity']:.1%}.")
    lines += student_lines(record)
    if record.get("unigram"):
        u = record["unigram"]
        lines.append(f"- The word-frequency baseline on the same masked words (each piece guessed from its frequency "
                     f"in the training split, whatever the context): {u['piece_loss']:.3f} nats per piece, whole-word "
                     f"top-1 {u['word_top1']:.1%} (always \"{u['top_guess']}\"). This model: "
                     f"{u['piece_loss'] - held['piece_loss']:+.3f} nats per piece below it.")
    lines += [
        "",
        ("**Learning curve** (held-out whole-word top-1 on the tuning split's "
         if record.get("tuning") else "**Learning curve** (held-out whole-word top-1 on the first ")
        + f"{cfg['eval_sentences']} held-out sentences):",
        "",
        "| tokens | whole-word top-1 | train loss |",
        "|---|---|---|",
        *[f"| {p['tokens']:,} | {p['word_top1']:.1%} | {p['train_loss']:.3f} |" for p in record["curve"]],
        "",
        *corpus_lines(record),
        "",
        f"**Limits.** A miniature: {record['tokens'] / 1e6:.1f} million training tokens on {where(record)}, a tiny fraction "
        "of any published run. It shows its family's idea at this scale; it is not the published model and "
        "knows little English beyond frequent words and patterns.",
    ]
    return "\n".join(lines) + "\n"


def run_line(record: dict) -> str:
    """How long and how a run trained: tokens, steps, optimiser, schedule, precision, machine, costs."""
    cfg = record["config"]
    return (
        f"{record['tokens']:,} training tokens (padding excluded), {record['steps']:,} steps of "
        f"{cfg['batch_size']} sequences; AdamW (lr {cfg['lr']}, betas 0.9/0.98, weight decay "
        f"{cfg['weight_decay']}), linear warm-up over {cfg['warmup']:.0%} of the budget then linear decay to "
        f"zero; {PRECISION.get(cfg['autocast'], 'float32')}; seed {cfg['seed']}; "
        f"{where(record)} (torch {record['torch']}), {record['world_size']} process(es)"
        f"{', memory allocator ' + record['allocator'] if record.get('allocator') else ''}"
        f"{'; ' + record['concurrency'] if record.get('concurrency') else ''}; "
        f"{record['wall_minutes']:.1f} wall minutes ({record['tokens'] / (60 * record['wall_minutes']):,.0f} "
        f"tokens/s), {record['cpu_minutes_rank0']:.1f} CPU minutes; about "
        f"{record['flops'] / 1e12:.1f} TFLOPs ({record['flops_per_token'] / 1e6:.2f} MFLOPs per token: torch's "
        "FlopCounterMode over the first training step, forward and backward in one count, a teacher's "
        "forward included where there is one; `python -m scripts.zoo flops`).")


def corpus_lines(record: dict) -> list[str]:
    """The corpus and licence paragraphs of a card."""
    sources = json.loads((REPO_ROOT / "data" / "corpus_sources.json").read_text(encoding="utf-8"))
    return [
        f"**Corpus.** {record['corpus']['sentences']:,} training sentences of public-domain and permissively "
        "licensed English (`python -m scripts.build_corpus`; `data/corpus_sources.json`):",
        "",
        "| source | package | licence |",
        "|---|---|---|",
        *[f"| {s['name']}: {s['description']} | {s['package']} {s['version']} | {s['licence'][:90]} |" for s in sources],
        "",
        "**Licence.** The weights are released under the project's terms; the corpus texts are public domain "
        "or permissively licensed (table above).",
    ]


def where(record: dict) -> str:
    """The machine a run trained on: the GPU's name, or the CPU."""
    name = record.get("device_name")
    return name if name and name != "CPU" else ("CPU" if record["device"] == "cpu" else record["device"])


def tuning_line(record: dict) -> str:
    """The tuning search this family got (the same search for every family) and its choice."""
    t = record["tuning"]
    trials = "; ".join(", ".join(f"{k} {v:g}" for k, v in tr.items() if k in ("lr", "dropout", "batch_size", "warmup"))
                       + f": {tr['piece_loss']:.3f}" for tr in t["trials"])
    chosen = ", ".join(f"{k} {v:g}" for k, v in t["chosen"].items())
    return (f"Tuning: the same search for every family, each grid point ({t['grid']}) trained on "
            f"{t['trial_tokens']:,} tokens and scored by the loss per masked piece on a tuning split "
            f"({t['chosen_by']}): {trials}. Chosen: **{chosen}**."
            + (f" The search: {t['search'].replace('--trial-tokens', format(t['trial_tokens'], ',') + ' tokens')}."
               if t.get("search") else "")
            + (f" Teacher: {record['teacher']}." if record.get("teacher") else ""))


def write_cards(log=print) -> None:
    """MODEL_CARD.md for every miniature that has a record."""
    for key in (*ZOO_KEYS, *DECODER_KEYS, *PAST_BUDGET_KEYS):
        path = zoo_folder(key) / "record.json"
        if not path.is_file():
            log(f"{key}: no record, skipped")
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        text = (decoder_card(key, record) if key in DECODER_KEYS else past_budget_card(key, record)
                if key in PAST_BUDGET_KEYS else card(key, record, recipe_of(key)))
        (zoo_folder(key) / "MODEL_CARD.md").write_text(text, encoding="utf-8")
        log(f"{key}: MODEL_CARD.md written")




def summary_table() -> str:
    """The README's table: one row per miniature, from the records."""
    rows = ["| model | tokenizer | tokens | steps | wall min | tokens/s | CPU min | MFLOP/token | TFLOPs | parameters "
            "| fp16 MiB | held-out whole-word top-1 | everyday top-5 | NSP / SOP held-out (majority) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in zoo_comparison():
        size = sum(p.stat().st_size for p in zoo_folder(e.key).rglob("*.safetensors")) / 2**20
        pair = "" if e.pair_accuracy is None else f"{e.pair_accuracy:.1%} ({e.pair_majority:.1%})"
        scored = "" if e.scored_model == "the model" else f" ({e.scored_model})"
        rows.append(f"| `{e.key}` | {e.tokenizer_kind} | {e.tokens:,} | {e.steps:,} | {e.wall_minutes:.1f} | "
                    f"{e.tokens_per_s:,.0f} | {e.cpu_minutes:.1f} | {e.flops / e.tokens / 1e6:.2f} | "
                    f"{e.flops / 1e12:.1f} | {e.parameters:,} | {size:.1f} | "
                    f"{e.score:.1%}{scored} | {e.everyday_top5:.0%} | {pair} |")
    return "\n".join(rows)


def targets_table(folder: Path | None = None) -> str:
    """The zoo's targets per family, from the records in ``folder`` (default: the zoo's):
    loss per piece against the word-frequency (unigram) baseline, whole-word top-1, everyday
    top-5, tokens, tokens/s, the tuning chosen, ELECTRA's ROC AUC, NSP / SOP."""
    from ..registry.zoo_entries import ZOO_DIR

    folder = Path(folder or ZOO_DIR)
    rows = ["| model | piece loss | unigram | below unigram (target >= 1 nat) | whole-word top-1 (>= 15 %) "
            "| everyday top-5 (>= 20 %) | tokens | tokens/s | where | tuning chosen | RTD AUC (>= 0.8) "
            "| NSP (>= 70 %) / SOP (>= 65 %) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in ZOO_KEYS:
        path = folder / key / "record.json"
        if not path.is_file():
            rows.append(f"| `{key}` | no record |" + " |" * 10)
            continue
        r = json.loads(path.read_text(encoding="utf-8"))
        held, uni = r["heldout"], r.get("unigram")
        gap = "" if uni is None else f"{uni['piece_loss'] - held['piece_loss']:+.2f}"
        rate = r.get("tokens_per_s") or r["tokens"] / (60 * r["wall_minutes"])
        chosen = r.get("tuning", {}).get("chosen")
        rtd = r.get("rtd_heldout") or {}
        pair = r.get("pair_heldout")
        uni_loss = "" if uni is None else f"{uni['piece_loss']:.2f}"
        tuning = "" if chosen is None else ", ".join(f"{k} {v:g}" for k, v in chosen.items())
        auc = f"{rtd['roc_auc']:.3f}" if "roc_auc" in rtd else ""
        pairs = ("" if pair is None else
                 f"{pair['accuracy']:.1%} ({r['pair_objective'].upper()}, majority {pair['majority']:.1%})")
        rows.append(f"| `{key}` | {held['piece_loss']:.2f} | {uni_loss} | {gap} | {held['word_top1']:.1%} "
                    f"| {r['everyday']['hit_rate']:.0%} | {r['tokens']:,} | {rate:,.0f} "
                    f"| {r.get('device_name', r.get('device', ''))} | {tuning} | {auc} | {pairs} |")
    return "\n".join(rows)


# --- the decoder twin's card ---------------------------------------------------------------------


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
    twin_record = zoo_folder(twin) / "record.json"
    twin_cast = (json.loads(twin_record.read_text(encoding="utf-8"))["config"]["autocast"]
                 if twin_record.is_file() else cfg["autocast"])
    differs = ("Only the objective differs" if twin_cast == cfg["autocast"] else
               f"The objective differs, and so does the precision: {PRECISION.get(cfg['autocast'], 'float32')} "
               f"here, {PRECISION.get(twin_cast, 'float32')} for {twin}")
    lines = [
        f"# `{key}`: the mini zoo's storyteller, a miniature decoder trained by Encoder Lab",
        "",
        f"**What it is.** {recipe_of(key)}; trained **from random initialisation** by this project, with "
        f"transformers' class of Ettin's decoders. It is `{twin}`'s twin: "
        f"{record['twin']['shares']}. {differs}. `{twin}` fills masked pieces with both sides "
        "in view; this model gives the next piece from the pieces before it.",
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


def past_budget_card(key: str, record: dict, folder: Path | None = None) -> str:
    """The card of a zoo model trained on past the shared budget for one head (``scripts.zoo
    detector``, ``scripts.zoo nsp``); ``folder``: where it is (default: the zoo's)."""
    size = sum(p.stat().st_size for p in (folder or zoo_folder(key)).glob("*.safetensors")) / 2**20
    start, head = past_budget_start(key)
    detector = head == "rtd"
    view = ("Masking lab's replaced-token view" if detector
            else f"Masking lab's pair view and the NSP lesson, beside {start}")
    amount = f"{record['tokens']:,} tokens" if detector else f"{record['pairs']:,} pairs"
    built = record["corruption"] if detector else f"NSP alone, on {record['pairs_built']}"
    lines = [
        f"# `{key}`: {start} trained on past the zoo's budget for one head, by Encoder Lab",
        "",
        f"**What it is.** {recipe_of(key)}. {'ElectraForPreTraining' if detector else 'BertForPreTraining'}, "
        f"{record['parameters']:,} parameters, float16 safetensors, {size:.1f} MiB. It serves the {view}; it is not "
        f"one of the zoo's shared-budget runs, and Compare keeps `{start}`.",
        "",
        f"**How it was trained** (`python -m {record['script']}`). Start: {record['start']}. {built[0].upper()}"
        f"{built[1:]}. The corpus's training split only, never the held-out split. AdamW, lr {record['lr']:g}, batch "
        f"{record['batch']}, float32; {record['steps']:,} steps, {amount}, {record['wall_minutes']:.0f} wall minutes "
        f"({record['cpu_minutes']:.0f} CPU minutes) on a CPU, on top of {start}'s shared-budget run. "
        f"torch {record['torch']}.",
        "",
        "**Scores** (the shipped float16 weights, read in float32).",
        *_rtd_line(key, record.get("rtd_heldout") or {}),
        *student_lines(record),
        "",
        f"**Limits.** A miniature ({start}'s shape) trained on a CPU for minutes: its figures are on the project's own "
        "sentences, held-out and written, and say nothing of any published model.",
    ]
    return "\n".join(lines) + "\n"


def _rtd_line(key: str, rtd: dict) -> list[str]:
    """A detector's held-out detection on generator-corrupted text, beside mini-electra's."""
    if not rtd:
        return []
    shared = detection_figures("mini-electra")[0]
    return [f"- Held-out generator-corrupted text (ELECTRA's masking, mini-electra's generator): ROC AUC of "
            f"P(replaced), replaced against original tokens, **{rtd['roc_auc']:.3f}** over {rtd['replaced']:,} "
            f"replaced and {rtd['original']:,} original tokens; `python -m scripts.zoo rtd --folder weights/zoo/{key}`."
            + (f" mini-electra's discriminator, on the same text: {shared:.3f}." if shared else "")]
