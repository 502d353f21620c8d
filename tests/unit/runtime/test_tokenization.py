"""tokenize: pieces, ids, special tokens, segment ids and offsets."""

from __future__ import annotations

import pytest

from models import get_spec, InputError, load_tokenizer, tokenize


def test_single_text(encoder_key):
    text = "Tokenization splits unbelievable words."
    r = tokenize(encoder_key, text)
    tok = load_tokenizer(get_spec(encoder_key))
    assert list(r.ids) == tok(text)["input_ids"]
    assert r.tokens[0] == "[CLS]" and r.tokens[-1] == "[SEP]"
    assert any(t.startswith("##") for t in r.tokens)  # WordPiece continuation pieces
    assert r.special_tokens_mask[0] == 1 and r.special_tokens_mask[-1] == 1
    assert sum(r.special_tokens_mask) == 2
    assert set(r.token_type_ids) == {0}
    assert len({len(r.tokens), len(r.ids), len(r.offsets), len(r.token_type_ids)}) == 1
    for token, (start, end), special in zip(r.tokens, r.offsets, r.special_tokens_mask):
        if not special:  # each piece maps back to its characters (uncased model)
            assert token.removeprefix("##") == text[start:end].lower()


def test_pair_has_segment_ids(encoder_key):
    r = tokenize(encoder_key, "The bank was closed.", text_pair="We sat by the river.")
    sep = [i for i, t in enumerate(r.tokens) if t == "[SEP]"]
    assert len(sep) == 2
    assert set(r.token_type_ids[: sep[0] + 1]) == {0}
    assert set(r.token_type_ids[sep[0] + 1 :]) == {1}


@pytest.mark.parametrize("bad", ["", "  ", None, 3])
def test_bad_text(encoder_key, bad):
    with pytest.raises(InputError):
        tokenize(encoder_key, bad)


def test_bad_pair(encoder_key):
    with pytest.raises(InputError, match="second text"):
        tokenize(encoder_key, "fine", text_pair=" ")


@pytest.mark.parametrize("pair", ["We sat by the riverbank, unbelievably calm.", "Tokenization!"])
def test_pair_offsets_point_into_each_own_text(encoder_key, pair):
    text = "The bank was closed."
    r = tokenize(encoder_key, text, text_pair=pair)
    single = tokenize(encoder_key, text)
    assert r.offsets[: len(single.offsets) - 1] == single.offsets[:-1]  # the first text as alone
    seen = {0: [], 1: []}
    for token, (start, end), special, segment in zip(r.tokens, r.offsets, r.special_tokens_mask,
                                                      r.token_type_ids):
        if special:
            assert (start, end) == (0, 0)
            continue
        source = (text, pair)[segment]
        assert 0 <= start < end <= len(source)
        assert token.removeprefix("##") == source[start:end].lower()  # uncased WordPiece
        seen[segment].append(source[start:end])
    # every non-space character of both texts is covered, in order
    assert "".join(seen[0]) == text.replace(" ", "")
    assert "".join(seen[1]) == pair.replace(" ", "")
