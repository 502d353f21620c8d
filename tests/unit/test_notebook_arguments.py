"""The notebook contract of the public functions: an argument of the wrong type or out of its
documented range, passed as a notebook user would, is an ``InputError`` naming it, never a
TypeError from deep inside nor a silently different computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from models import (
    HEAD_FILTERS,
    InputError,
    answer_span,
    attention_rollout,
    attribute_classification,
    attribute_fill_mask,
    best_pooling,
    classify,
    classify_pair,
    compare_poolings,
    default_selection,
    deletion_curve,
    detect_replaced,
    distill,
    embed,
    evaluate_causal,
    explain_loss,
    evaluate_fill_mask,
    extract_attention,
    filter_heads,
    fill_mask,
    groups_text,
    head_model_key,
    head_statistics,
    first_capable,
    forward_steps,
    knowledge_probe,
    list_models,
    mask_word,
    masking_statistics,
    mlm_gradients,
    pair_loss,
    parse_groups,
    probe_layers,
    project_2d,
    separation_score,
    simulate_masking,
    train_classifier,
    train_pair_classifier,
    train_sentence_encoder,
    train_span_head,
    train_tiny,
)

MLM = "mini-bert"


@pytest.mark.parametrize("limit", [-1, 0, True, 2.5, math.nan, math.inf, "3", 10**9])
@pytest.mark.parametrize("call", [
    lambda limit: evaluate_fill_mask(MLM, "heldout", limit=limit),
    lambda limit: evaluate_fill_mask(MLM, "everyday", limit=limit),
    lambda limit: evaluate_causal(MLM, limit=limit),
], ids=["heldout", "everyday", "causal"])
def test_a_limit_is_a_whole_number_of_sentences(call, limit):
    """-1 used to drop the last sentence, True to read one, 2.5 a TypeError from a slice."""
    with pytest.raises(InputError, match="limit must be a whole number from 1 to"):
        call(limit)


def test_a_limit_may_be_a_whole_float_or_a_numpy_integer():
    assert evaluate_fill_mask(MLM, limit=np.int64(3)).n == evaluate_fill_mask(MLM, limit=3.0).n
    assert evaluate_causal(MLM, limit=np.int64(2)).sentences == 2
    assert evaluate_fill_mask(MLM, "everyday", limit=None).n == evaluate_fill_mask(MLM, "everyday").n > 3


@pytest.mark.parametrize("seed", [None, -1, True, 2.5, math.nan, "1", 2**40])
def test_the_causal_evaluations_seed_is_checked(seed):
    with pytest.raises(InputError, match="seed must be a whole number from 0 to 2147483647"):
        evaluate_causal(MLM, limit=2, seed=seed)


@pytest.mark.parametrize("probe_set", [["facts"], {"facts": 1}])
def test_an_unhashable_probe_set_is_an_unknown_set(probe_set):
    with pytest.raises(InputError, match="Unknown probe set"):
        knowledge_probe(MLM, probe_set, limit=2)


TEXT = "The cat sat on the [MASK]."
FLAGS = {
    "fill_mask causal": (lambda v: fill_mask(MLM, TEXT, causal=v), "causal"),
    "extract_attention causal": (lambda v: extract_attention(MLM, "The cat sat.", causal=v), "causal"),
    "embed normalize": (lambda v: embed(MLM, ["The cat sat."], normalize=v), "normalize"),
    "embed truncate": (lambda v: embed(MLM, ["The cat sat."], truncate=v), "truncate"),
    "simulate_masking whole_word": (lambda v: simulate_masking(MLM, "The cat sat.", whole_word=v), "whole_word"),
    "simulate_masking dynamic": (lambda v: simulate_masking(MLM, "The cat sat.", dynamic=v), "dynamic"),
    "masking_statistics whole_word": (lambda v: masking_statistics(MLM, ["The cat sat."], whole_word=v, draws=2),
                                      "whole_word"),
    "pair_loss label": (lambda v: pair_loss("mini-albert", "It rained.", "The road was wet.", label=v), "label"),
    "forward_steps mlm_head": (lambda v: forward_steps(MLM, TEXT, mlm_head=v), "mlm_head"),
    "train_classifier freeze": (lambda v: train_classifier(MLM, "source", freeze=v, epochs=1), "freeze"),
    "train_pair_classifier freeze": (lambda v: train_pair_classifier(MLM, freeze=v, epochs=1), "freeze"),
}


@pytest.mark.parametrize("flag, value", [
    (flag, value) for flag in FLAGS for value in ["False", "no", 0, 1, math.nan, [], None]
    if not (value is None and flag.endswith("mlm_head"))  # None: mlm_head's documented default
])
def test_a_flag_is_true_or_false_not_a_truthy_value(flag, value):
    """causal="False" used to run causal (a non-empty string is truthy), label=math.nan scored the
    pair as "in order", freeze=0 fine-tuned: a flag is read only from True or False."""
    call, name = FLAGS[flag]
    with pytest.raises(InputError, match=f"{name} must be True or False; got"):
        call(value)


def test_a_numpy_bool_is_a_flag():
    assert fill_mask(MLM, TEXT, causal=np.bool_(True)) == fill_mask(MLM, TEXT, causal=True)
    assert pair_loss("mini-albert", "It rained.", "The road was wet.", label=np.bool_(False)).is_next is False


@pytest.mark.parametrize("call", [attribute_fill_mask, deletion_curve])
@pytest.mark.parametrize("argument, value", [
    ("text", ["The cat sat on the [MASK]."]), ("mask_index", [0]), ("target", ["mat"]), ("target", {"mat": 1}),
])
def test_a_list_where_a_value_goes_is_an_input_error_not_an_unhashable_key(call, argument, value):
    """The arguments were the result cache's key before they were checked: a TypeError."""
    kwargs = {"text": TEXT, "mask_index": 0, "target": None, argument: value}
    with pytest.raises(InputError, match=argument):
        call(MLM, method="gradient_x_input", **kwargs)


def test_a_numpy_token_id_is_a_target_as_an_int_is():
    """np.int64 (what a notebook's argmax gives) was refused as not 'a token id'."""
    top = fill_mask(MLM, TEXT, top_k=1).masks[0].predictions[0].token_id
    as_numpy = attribute_fill_mask(MLM, TEXT, "gradient_x_input", target=np.int64(top))
    assert as_numpy.target_id == top == attribute_fill_mask(MLM, TEXT, "gradient_x_input", target=int(top)).target_id


@pytest.mark.parametrize("masked", [3, "3", 2.0, np.int64(3)])
def test_mlm_gradients_masked_is_a_list_of_token_indices(masked):
    """A lone index (a TypeError: not iterable) or a string (its characters read as nothing
    masked) is an InputError that shows the list form."""
    with pytest.raises(InputError, match=r"masked must be a list of token indices, e\.g\. \[1\]"):
        mlm_gradients(MLM, "the cat sat on the mat", masked=masked)


@pytest.mark.parametrize("capability", ["mlmm", ["mlm"], None])
def test_an_unknown_capability_is_an_input_error(capability):
    """default_selection and first_capable raised a bare ValueError (a TypeError for a list)."""
    for call in (default_selection, first_capable):
        with pytest.raises(InputError, match="Unknown capability"):
            call(capability=capability)


@pytest.mark.parametrize("call", [
    lambda task: train_classifier(MLM, task, epochs=1),
    lambda task: probe_layers(MLM, task, epochs=1),
    lambda task: train_pair_classifier(MLM, task, epochs=1),
], ids=["train_classifier", "probe_layers", "train_pair_classifier"])
def test_a_list_of_tasks_is_an_unknown_task(call):
    """The task name was a cache's key before it was checked: a TypeError (unhashable)."""
    with pytest.raises(InputError, match="Unknown (pair )?task"):
        call(["source"])


@pytest.mark.parametrize("call", [
    lambda h: classify(h, "Hi."), head_model_key, lambda h: attribute_classification(h, "Hi.", "gradient_x_input"),
    lambda h: classify_pair(h, "dog", "an animal"), lambda h: answer_span(h, "Where?", "In Paris."),
], ids=["classify", "head_model_key", "attribute_classification", "classify_pair", "answer_span"])
def test_a_list_of_head_ids_is_no_trained_head(call):
    with pytest.raises(InputError, match="No trained"):
        call(["probe-1"])


@pytest.mark.parametrize("learning_rate", ["x", [0.01]])
def test_train_classifiers_learning_rate_is_checked_as_the_pair_heads_is(learning_rate):
    """float("x") was a bare ValueError, float([0.01]) a TypeError."""
    with pytest.raises(InputError, match="learning_rate must be between 0 and 1"):
        train_classifier(MLM, "source", epochs=1, learning_rate=learning_rate)


@pytest.fixture(scope="module")
def span_head():
    return train_span_head(MLM, steps=2).head_id


@pytest.mark.parametrize("argument", ["question", "context"])
@pytest.mark.parametrize("value", [3, 2.5, ["Where?"], True, "x " * 20_000])
def test_answer_spans_texts_are_checked_as_every_text_is(span_head, argument, value):
    """A number or a list was an AttributeError ('has no attribute strip'); a text over the
    core's limit was not refused as every other text is."""
    texts = {"question": "Where is the cat?", "context": "The cat is in Paris.", argument: value}
    with pytest.raises(InputError, match=f"The {argument} (must be a string|is 40,000 characters)"):
        answer_span(span_head, **texts)


@pytest.mark.parametrize("argument, value, words", [
    ("seed", 2.5, "seed must be a whole number"),  # was run as seed 2
    ("steps", 2.5, "steps must be a whole number"),  # was run as 2 steps
    ("alpha", True, "alpha must be above 0"),  # was alpha 1.0
    ("temperature", "2", "temperature must be at least"),
    ("learning_rate", "0.002", "learning_rate must be between 0 and 1"),  # was read as 0.002
    ("max_seconds", True, "max_seconds must be between 1 and"),
    ("student_shape", ["2x64"], "Unknown student shape"),  # was a TypeError (unhashable)
])
def test_distills_numbers_are_not_truncated_nor_read_from_bools(argument, value, words):
    with pytest.raises(InputError, match=words):
        distill(MLM, **{"steps": 2, argument: value})


@pytest.mark.parametrize("call, words", [
    (lambda: train_sentence_encoder(MLM, margin=True, steps=2), "margin must be above 0"),
    (lambda: train_sentence_encoder(MLM, max_seconds=np.bool_(True), steps=2), "max_seconds must be"),
    (lambda: train_span_head(MLM, steps=2, max_seconds=True), "max_seconds must be"),
    (lambda: train_pair_classifier(MLM, epochs=1, learning_rate="0.01"), "learning_rate must be"),
], ids=["margin", "sentence max_seconds", "span max_seconds", "pair learning_rate"])
def test_a_live_runs_numbers_are_real_numbers(call, words):
    """True was read as 1 (a margin of 1, a 1 s budget), a string as its number."""
    with pytest.raises(InputError, match=words):
        call()


@pytest.mark.parametrize("kwargs, words", [
    ({"batch_size": 2.5}, "batch_size must be a whole number from 1 to 256"),  # was a TypeError
    ({"batch_size": -1}, "batch_size must be a whole number"),  # was an IndexError
    ({"batch_size": True}, "batch_size must be a whole number"),  # was a batch of 1
    ({"sentences": "The cat sat."}, "sentences must be a list of texts"),
    ({"sentences": [3]}, "The sentence 1 must be a string"),
    ({"probes": ["The cat sat."]}, r"probe 1 has no \[MASK\]"),  # was an IndexError
    ({"should_stop": True}, "should_stop must be a function"),  # was a TypeError: not callable
])
def test_train_tiny_checks_its_arguments(kwargs, words):
    with pytest.raises(InputError, match=words):
        next(iter(train_tiny(steps=2, **kwargs)))


@pytest.mark.parametrize("call, words", [
    (lambda: mask_word("The cat sat.", True), "segment_index must be a whole number"),  # was index 1
    (lambda: mask_word("The cat sat.", 2.5), "segment_index must be a whole number"),  # was a TypeError
    (lambda: mask_word("The cat sat.", 2, mask=None), "The mask must be a string"),  # was a TypeError
    (lambda: parse_groups(["a", "b"]), "The sentences must be a string"),  # was an AttributeError
    (lambda: groups_text("no such set"), "Unknown sentence set"),  # was a KeyError
    (lambda: groups_text(["a"]), "Unknown sentence set"),
    (lambda: filter_heads(None, next(iter(HEAD_FILTERS))), "needs a head_statistics result"),  # AttributeError
    (lambda: filter_heads(head_statistics(np.full((1, 1, 2, 2), 0.5)), ["x"]), "Unknown filter"),  # TypeError
    (lambda: head_statistics("weights"), "The attention weights must be an array of numbers"),
    (lambda: attention_rollout([[1, 2], [3]]), "The attention weights must be an array of numbers"),
    (lambda: project_2d([["a", "b"], ["c", "d"]]), "The vectors must be an array of numbers"),  # ValueError
    (lambda: separation_score(np.eye(3), 3), "one group"),  # was a TypeError: no len()
    (lambda: separation_score(0.5, [0]), "must be square"),  # was an IndexError
    (lambda: separation_score([[1, math.nan], [math.nan, 1]], [0, 0]), "NaN"),  # scored
    (lambda: best_pooling({}), "at least one pooling"),  # was a ValueError: max() of nothing
    (lambda: best_pooling({"cls": 0.9}), "at least one pooling"),  # was an AttributeError
])
def test_the_plain_helpers_refuse_what_they_cannot_read(call, words):
    with pytest.raises(InputError, match=words):
        call()


def test_a_whole_float_or_numpy_segment_index_masks_as_an_int_does():
    assert mask_word("The cat sat.", 2.0) == mask_word("The cat sat.", np.int64(2)) == "The [MASK] sat."


def test_explain_loss_takes_a_models_own_numpy_logits():
    """A float32 logit (what a model's logits.numpy() holds) was refused as not a number."""
    logits = np.array([3.0, 1.5, 0.2], dtype=np.float32)
    result = explain_loss(dict(zip(["cat", "dog", "mat"], logits)), "cat")
    expected = torch.nn.functional.cross_entropy(torch.tensor(logits)[None], torch.tensor([0]))
    assert result.loss == pytest.approx(float(expected), rel=1e-6)


@pytest.mark.parametrize("call, words", [
    (lambda: explain_loss({"cat": 3.0}, ["cat"]), "The target"),  # was a TypeError: unhashable
    (lambda: masking_statistics(MLM, 3, draws=2), "Give a list of at least one"),  # was a TypeError
    (lambda: compare_poolings(MLM, ["A cat.", "A dog."], poolings=None), "poolings must be a list"),
    (lambda: compare_poolings(MLM, ["A cat.", "A dog."], poolings="cls"), "poolings must be a list"),  # was read as 'c', 'l', 's'
])
def test_containers_where_a_list_goes(call, words):
    with pytest.raises(InputError, match=words):
        call()


@pytest.mark.parametrize("call, words", [
    (lambda: default_selection(["mini-bert"]), "models must be a list of ModelSpec"),  # AttributeError
    (lambda: first_capable("mini-bert"), "models must be a list of ModelSpec"),  # AttributeError
    (lambda: default_selection(published_limit=-1), "published_limit must be a whole number"),  # dropped one
    (lambda: default_selection(published_limit=2.5), "published_limit must be a whole number"),
])
def test_the_model_pickers_check_their_arguments(call, words):
    with pytest.raises(InputError, match=words):
        call()


def test_the_model_pickers_take_the_registry_as_a_tuple_or_a_list():
    assert default_selection(list(list_models())) == default_selection(tuple(list_models())) == default_selection()


@pytest.mark.parametrize("positions, words", [
    ([-1], "each of cls_positions must be a whole number from 0 to 2"),  # was read as the last token
    ([True], "each of cls_positions must be a whole number"),  # was an IndexError
    ([7], "each of cls_positions must be a whole number from 0 to 2"),  # was an IndexError
    (None, "cls_positions must be a list of token positions"),  # was a TypeError
])
def test_head_statistics_of_an_array_checks_the_cls_positions(positions, words):
    with pytest.raises(InputError, match=words):
        head_statistics(np.full((1, 1, 3, 3), 1 / 3), cls_positions=positions)


def test_head_statistics_of_an_array_equals_the_results_own():
    result = extract_attention(MLM, "The cat sat.")
    of_array = head_statistics(result.weights, cls_positions=list(result.cls_positions),
                               sep_positions=np.array(result.sep_positions))
    weights = result.weights  # (L, H, T, T): the share each row puts on [CLS], by hand
    assert np.allclose(of_array.to_cls, weights[..., list(result.cls_positions)].sum(-1).mean(-1))


def test_detect_replaced_takes_a_whole_float_or_numpy_swap_as_every_count():
    """swap=2.0 or np.int64(2) (what a number box or a NumPy draw gives) was refused, though
    every other count takes them."""
    text = "The chef cooked a delicious meal for the guests."
    as_int = detect_replaced("mini-electra", text, swap=2, seed=3)
    assert detect_replaced("mini-electra", text, swap=2.0, seed=3) == as_int
    assert detect_replaced("mini-electra", text, swap=np.int64(2), seed=3) == as_int
    with pytest.raises(InputError, match=r"swap \(tokens the generator replaces\) must be a whole number from 0 to 10"):
        detect_replaced("mini-electra", text, swap=2.5)


def test_the_masking_rates_may_be_numpy_numbers():
    """np.float32(0.15) or np.int64(1) was refused as 'must be a number'."""
    plain = simulate_masking(MLM, "The cat sat on the mat.", rate=0.5, mask=1.0, random=0.0, keep=0.0, seed=1)
    numpy = simulate_masking(MLM, "The cat sat on the mat.", rate=np.float32(0.5), mask=np.int64(1),
                             random=np.float64(0), keep=np.float32(0), seed=1)
    assert numpy == plain and type(numpy.policy.rate) is float
    with pytest.raises(InputError, match="The rate probability must be a number"):
        simulate_masking(MLM, "The cat sat.", rate=True)
