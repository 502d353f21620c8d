"""The notebook contract of the public functions: an argument of the wrong type or out of its
documented range, passed as a notebook user would, is an ``InputError`` naming it, never a
TypeError from deep inside nor a silently different computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models import (
    InputError,
    evaluate_causal,
    evaluate_fill_mask,
    knowledge_probe,
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
