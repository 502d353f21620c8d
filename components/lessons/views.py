"""The Lessons tab's live views: each step's inputs in, its figures and tables out.

Adapters of a few lines over the core (``models``) and the tabs' own plot builders; every
view is cached per process (``cached_view``), so a step's default example is computed once
per model, however many students open it. No Gradio here: errors are the core's own
``EncoderLabError``, turned into a message by the tab.
"""

from __future__ import annotations

import random

from models import (
    MASK_PATTERN,
    EncoderLabError,
    ablate_heads,
    answer_span,
    classify,
    classify_pair,
    compare_fill_mask,
    compare_poolings,
    default_selection,
    distill,
    encoder_vs_decoder,
    explain_masked_position,
    extract_attention,
    fill_mask,
    generate_left_to_right,
    get_spec,
    head_model_key,
    heldout_sentences,
    input_embeddings,
    kept_run,
    live_heads,
    logit_lens,
    masked_lm_loss,
    next_token,
    pair_figures,
    pair_loss,
    parse_groups,
    past_budget_of,
    project_2d,
    search,
    sentence_encoders,
    sentence_order,
    separation_score,
    similarity,
    simulate_masking,
    static_vs_contextual,
    train_classifier,
    train_pair_classifier,
    train_sentence_encoder,
    train_span_head,
    zoo_comparison,
)

from ..attention import plots as attention_plots
from ..compare import decoder_plots, plots as compare_plots
from ..compare.copy import ZOO_MISSING
from ..embeddings import plots as embeddings_plots
from ..fill_mask import plots as fill_mask_plots
from ..finetune import plots as finetune_plots
from ..finetune import sentence_plots
from ..finetune.reading import reading_view
from ..finetune.copy import TOKEN_COLOURS
from ..masking import objectives_plots, plots as masking_plots
from ..parts import plots as parts_plots
from ..shell.common import error_figure
from ..shell.view_cache import cached_view
from ..views import arithmetic_plots, input_embeddings_plots
from . import before_bert_plots, copy, plots


@cached_view()
def encoder_decoder(model_key: str, text: str):
    """The detective fills the blank with both sides in view; its decoder twin, the storyteller,
    reads the text before the blank and gives the next piece; the table measures both; the
    encoder under a causal mask it never trained with is the second exhibit."""
    both = fill_mask(model_key, text, 5)
    twin = get_spec(model_key).twin
    prompt = MASK_PATTERN.split(text, 1)[0].strip()
    if not twin or not prompt:
        story, table = error_figure(f"No decoder twin of {model_key} here, or no words before the blank to "
                                    "continue." if prompt else "Put a few words before the blank: the storyteller "
                                    "continues the text to its left."), None
        continued = ""
    else:
        story = decoder_plots.next_token_figure(next_token(twin, prompt, 5))
        continued = generate_left_to_right(twin, prompt, steps=8, seed=0, top_k=5).text
        table = encoder_vs_decoder(model_key, twin, measure=False)  # measured in Compare (minutes)
    if get_spec(model_key).can("causal"):
        left = fill_mask_plots.fill_mask_figure(fill_mask(model_key, text, 5, True))
    else:
        left = error_figure(f"{model_key} cannot run with a causal mask.")
    note = plots.encoder_decoder_note(model_key, twin, both.masks[0].predictions[0].token, continued)
    if table is not None:
        note += "\n\n" + decoder_plots.versus_md(table)
    elif twin and continued:
        note += ("\n\nThe table that measures the pair on held-out text is not measured on this server yet: "
                 "Compare's mini-zoo section measures it (minutes on two cores), and this step shows it after.")
    frame = None if table is None else decoder_plots.versus_frame(table)
    return fill_mask_plots.fill_mask_figure(both), story, note, frame, left


@cached_view()
def before_bert(model_key: str, word: str, sentences: str):
    """One word's static vectors (two tables) against its contextual ones, sense by sense."""
    result = static_vs_contextual(word, sentences or None, model_key)
    last = len(result.layers) - 1
    return (before_bert_plots.sense_layers_figure(result),
            before_bert_plots.sense_scatter(project_2d(result.last_layer), result, last),
            before_bert_plots.neighbours_frame(result), before_bert_plots.sentences_frame(result),
            before_bert_plots.before_bert_note(result))


@cached_view()
def tokens_embeddings(model_key: str, text: str, text_pair: str):
    result = input_embeddings(model_key, text, text_pair or None)
    return (input_embeddings_plots.input_embeddings_figure(result),
            input_embeddings_plots.input_embeddings_frame(result),
            input_embeddings_plots.input_embeddings_summary(result))


@cached_view()
def attention(model_key: str, text: str, layer: float, head: float):
    result = extract_attention(model_key, text)
    layer = max(0, min(int(layer or 0), result.num_layers - 1))
    head = max(0, min(int(head or 0), result.num_heads - 1))
    note = plots.attention_note(model_key, len(result.tokens), result.num_layers, result.num_heads, layer, head)
    return attention_plots.attention_heatmap(result, layer, head, "head"), note


@cached_view()
def knock_out_head(model_key: str, text: str, layer: float, head: float):
    """The blank with one head knocked out (zeroed), its bars before and after."""
    result = ablate_heads(model_key, text, [(int(layer or 0), int(head or 0))])
    before, after = result.masks[0].before[0], result.masks[0].after[0]
    note = (f"{parts_plots.ablation_markdown(result)}  \nTop guess with every head: "
            f"{parts_plots.guess_text(before)}; without layer {int(layer or 0)}, head {int(head or 0)}: "
            f"{parts_plots.guess_text(after)}.")
    return parts_plots.ablation_figure(result), note


@cached_view()
def answer_across_layers(model_key: str, text: str):
    """The logit lens: every layer read through the MLM head."""
    lens = logit_lens(model_key, text)
    return parts_plots.lens_figure([lens]), parts_plots.lens_frame(lens), parts_plots.lens_markdown(lens)


@cached_view()
def masking(model_key: str, text: str, rate: float, seed: float):
    sim = simulate_masking(model_key, text, float(rate), 0.8, 0.1, 0.1, False, 3, True, int(seed or 0))
    note = plots.masking_note(sum(not s for s in sim.special), [len(e.selected) for e in sim.epochs])
    return masking_plots.token_strip_html(sim), note


@cached_view()
def mlm_loss(model_key: str, text: str, seed: float):
    sim = simulate_masking(model_key, text, 0.15, 0.8, 0.1, 0.1, False, 1, True, int(seed or 0))
    loss = masked_lm_loss(model_key, sim)
    arithmetic = explain_masked_position(model_key, sim)
    note = plots.loss_note(model_key, loss.loss, len(loss.positions), arithmetic_plots.arithmetic_text(arithmetic))
    return masking_plots.loss_frame(loss), arithmetic_plots.arithmetic_frame(arithmetic), note


def _pair_kind(model_key: str) -> str:
    spec = get_spec(model_key)
    return spec.pair_head


@cached_view()
def sentence_pair(model_key: str, a: str, b: str):
    """The pair as written, against the contrast its head was trained to reject."""
    kind = _pair_kind(model_key)
    if kind == "nsp":
        other = random.Random(0).choice(heldout_sentences())
        rows = [("A, then your B", a, b, pair_loss(model_key, a, b, head="nsp").p_is_next),
                ("A, then a random sentence", a, other, pair_loss(model_key, a, other, head="nsp").p_is_next)]
        column = "P(IsNext)"
    else:
        rows = [("A, B as written", a, b, sentence_order(model_key, a, b)),
                ("B, A swapped", b, a, sentence_order(model_key, b, a))]
        column = "P(in order)"
    stage = past_budget_of(model_key, "nsp") if kind == "nsp" else ""
    if stage:  # the same model trained on past the budget on negatives of the same kind of text
        rows += [(f"{stage}: {name}", first, second, pair_loss(stage, first, second, head="nsp").p_is_next)
                 for name, first, second, _ in rows]
    frame = plots.pair_frame(rows, column)
    head = "next-sentence prediction" if kind == "nsp" else "sentence-order prediction"
    note = f"`{model_key}`, its {head} head.  \n" + objectives_plots.pair_markdown(kind, rows[0][3],
                                                                                  *pair_figures(model_key))
    if stage:
        note += "\n\n" + objectives_plots.stage_markdown(model_key, stage, rows[2][3], *pair_figures(stage))
    return frame, note


@cached_view()
def variants(text: str):
    entries = zoo_comparison()
    compared = compare_fill_mask(default_selection(None, "mlm"), text, 3)
    if not entries:
        return error_figure(ZOO_MISSING), None, compare_plots.fill_mask_frame(compared), ZOO_MISSING
    note = plots.variants_note(entries)
    return (compare_plots.zoo_curves_figure(entries), compare_plots.zoo_frame(entries),
            compare_plots.fill_mask_frame(compared), note)


@cached_view()
def pooling_retrieval(model_key: str, sentences_text: str, query: str, pooling: str):
    sentences, groups, topics = parse_groups(sentences_text)
    results = compare_poolings(model_key, sentences, -1, ("cls", "mean"))
    frame = None
    if 1 < len(set(groups)) < len(groups):
        frame = embeddings_plots.separation_frame(
            {r.pooling: separation_score(r.matrix, groups, topics) for r in results})
    hits = search(model_key, query, k=5, pooling=pooling)
    note = plots.search_note(model_key, len(hits.hits), hits.corpus_size, hits.pooling)
    return embeddings_plots.similarity_heatmaps(results, groups), frame, finetune_plots.hits_frame(hits), note


@cached_view(maxsize=4)
def _probe(model_key: str, task: str):
    return kept_run(train_classifier, model_key, task, pooling="mean", freeze=True)


def _head_kept(result) -> bool:
    try:
        head_model_key(result.head_id)  # still in the core's small store of trained heads?
    except EncoderLabError:  # pushed out by other trainings
        return False
    return True


def fine_tuning(model_key: str, task: str, sentence: str):
    """A probe on the frozen encoder (trained once per process), then your sentence."""
    result = _kept(_probe, _head_kept, model_key, task)
    answer = classify(result.head_id, sentence)  # a bad sentence's error is the user's, once
    return (finetune_plots.training_curves(result), finetune_plots.summary_markdown(result),
            finetune_plots.classification_html(answer, TOKEN_COLOURS))


# --- the four live-training steps: each run kept per settings; the trained copy or head is
# held in the core's small store, so a view asked again after it was pushed out trains again.
# Kept on disk too (``kept_run``), with the fine-tuning step's probe: ~28 s of a start-up's ~32 s
# of first views on two cores; a restart restores them.


def _kept(run, usable, *args):
    """``run(*args)`` (cached), trained again when ``usable(result)`` says its copy is gone."""
    result = run(*args)
    if not usable(result):
        run.cache_clear()
        result = run(*args)
    return result


@cached_view(maxsize=4)
def _sentence_run(model_key: str, loss: str, margin, steps, seed):
    return kept_run(train_sentence_encoder, model_key, loss=loss, margin=margin, steps=steps, seed=seed,
                    max_seconds=copy.LESSON_SECONDS)


@cached_view()
def sentence_encoder(model_key: str, sentences_text: str, loss: str, margin: float, steps: float, seed: float):
    """A copy trained as a sentence encoder (once per settings); your groups scored before and after."""
    sentences, groups, topics = parse_groups(sentences_text)
    before = similarity(model_key, sentences).matrix  # a bad input fails here, before any training
    result = _kept(_sentence_run, lambda r: r.encoder_key in sentence_encoders(),
                   model_key, loss, margin, int(steps or 0), int(seed or 0))
    scores = None
    if 1 < len(set(groups)) < len(groups):
        after = similarity(result.encoder_key, sentences).matrix
        scores = (separation_score(before, groups, topics), separation_score(after, groups, topics))
    return (sentence_plots.sentence_loss_chart(result), sentence_plots.similarity_before_after(result),
            plots.sentence_encoder_note(result, scores))


@cached_view(maxsize=4)
def _pair_run(model_key: str, task: str):
    return kept_run(train_pair_classifier, model_key, task, freeze=True, epochs=copy.PAIR_EPOCHS, seed=0,
                    train_size=copy.PAIR_TRAIN, max_seconds=copy.LESSON_SECONDS)


def sentence_pair_head(model_key: str, task: str, text_a: str, text_b: str):
    """A pair head trained once per process (a probe on [CLS]), then your pair classified."""
    result = _kept(_pair_run, lambda r: r.head_id in live_heads(), model_key, task)
    answer = classify_pair(result.head_id, text_a, text_b)
    return (finetune_plots.training_curves(result), sentence_plots.pair_summary(result),
            sentence_plots.pair_html(answer))


@cached_view(maxsize=2)
def _span_run(model_key: str, steps):
    return kept_run(train_span_head, model_key, steps=steps, seed=0, learning_rate=copy.SPAN_RATE,
                    max_seconds=copy.LESSON_SECONDS)


def span_head(model_key: str, question: str, context: str, steps: float):
    """A span head fine-tuned on a copy (once per step count), then your question answered."""
    result = _kept(_span_run, lambda r: r.head_id in live_heads(), model_key, int(steps or 0))
    answer = answer_span(result.head_id, question, context)
    return (sentence_plots.span_chart(answer), sentence_plots.span_html(answer),
            sentence_plots.span_summary(result))


@cached_view()
def distillation(teacher_key: str, steps: float, alpha: float, temperature: float):
    """Two students, the same seed, data and steps: soft targets + MLM vs MLM alone."""
    result = kept_run(distill, teacher_key, copy.DISTILL_STUDENT, steps=steps, alpha=alpha,
                      temperature=temperature, seed=0, max_seconds=copy.LESSON_SECONDS)
    return sentence_plots.distill_chart(result), sentence_plots.distill_summary(result)


@cached_view()
def retrieve_then_read(encoder_key: str, question: str, k: float):
    """The passages the bi-encoder finds, the span the reader points at, each part's cost."""
    return reading_view(question, k, encoder_key)
