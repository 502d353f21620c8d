"""The mini zoo's tokenizers, trained on the project's corpus with the `tokenizers` library.

One tokenizer per kind, all with the same vocabulary size, each saved through its family's
transformers class so that ``AutoTokenizer.from_pretrained(folder)`` loads it with the
family's own normalisation, pre-tokenisation, special tokens and pair template:

* ``wordpiece``      BERT's uncased WordPiece ([CLS] [SEP] [MASK] ##pieces): BERT, DistilBERT, ELECTRA
* ``bytelevel-bpe``  RoBERTa's byte-level BPE (<s> </s> <mask>, Ġ marks a leading space), cased
* ``modernbert-bpe`` ModernBERT's kind: byte-level BPE with BERT-style specials, cased
* ``unigram-albert`` SentencePiece-style Unigram (▁ marks a word start), lower-cased, ALBERT's specials
* ``unigram-deberta`` SentencePiece-style Unigram, cased, DeBERTa-v3's specials

The training pipeline (normaliser and pre-tokeniser) is taken from the family's own
transformers class, so the learnt vocabulary matches what that class does at run time.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

VOCAB_SIZE = 8192
KINDS = ("wordpiece", "bytelevel-bpe", "modernbert-bpe", "unigram-albert", "unigram-deberta")


def _family_class(kind: str):
    from transformers import AlbertTokenizer, BertTokenizer, DebertaV2Tokenizer, RobertaTokenizer

    return {"wordpiece": BertTokenizer, "bytelevel-bpe": RobertaTokenizer,
            "unigram-albert": AlbertTokenizer, "unigram-deberta": DebertaV2Tokenizer}[kind]


# Special tokens in id order (id 0, 1, ...), as each family's published vocabulary has them.
SPECIALS = {
    "wordpiece": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    "bytelevel-bpe": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    "modernbert-bpe": ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"],
    "unigram-albert": ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"],
    "unigram-deberta": ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"],
}


def train_tokenizer(kind: str, files: list[str], out: Path, vocab_size: int = VOCAB_SIZE):
    """Train one kind on ``files`` (one sentence per line) and save it to ``out``; returns it."""
    if kind not in KINDS:
        raise ValueError(f"Unknown tokenizer kind {kind!r}; choose one of {', '.join(KINDS)}.")
    specials = SPECIALS[kind]
    if kind == "modernbert-bpe":
        return _train_modernbert(files, out, vocab_size, specials)
    cls = _family_class(kind)
    backend = cls().backend_tokenizer  # the family's normaliser / pre-tokeniser / decoder
    if kind == "wordpiece":
        model = models.WordPiece(unk_token="[UNK]")
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials,
                                            continuing_subword_prefix="##")
    elif kind == "bytelevel-bpe":
        model = models.BPE()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        unk = "<unk>" if kind == "unigram-albert" else "[UNK]"
        model = models.Unigram()
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token=unk)
    raw = Tokenizer(model)
    raw.normalizer, raw.pre_tokenizer, raw.decoder = backend.normalizer, backend.pre_tokenizer, backend.decoder
    raw.train(files, trainer)
    learnt = json.loads(raw.to_str())["model"]
    if kind == "wordpiece":
        tok = cls(vocab=raw.get_vocab())
    elif kind == "bytelevel-bpe":
        # <mask> swallows the space before it, as roberta-base's does ("the <mask>" -> Ġthe, <mask>)
        tok = cls(vocab=learnt["vocab"], merges=[tuple(m) for m in learnt["merges"]],
                  mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))
    else:
        tok = cls(vocab=[tuple(v) for v in learnt["vocab"]])
    tok.model_max_length = 128
    tok.save_pretrained(str(out))
    if kind.startswith("unigram"):
        path = out / "tokenizer.json"
        spec = match_training_text_path(kind, json.loads(path.read_text(encoding="utf-8")))
        path.write_text(json.dumps(spec, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        # transformers 5's AlbertTokenizer rebuilds its pipeline ("always", WhitespaceSplit) on
        # load, so ALBERT's is read as saved; DeBERTa's class builds "first" itself without a prefix space
        config_path = out / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        # (the generic class lists no segment ids unless told: ALBERT's SOP reads them)
        config.update({"tokenizer_class": "TokenizersBackend",
                       "model_input_names": ["input_ids", "token_type_ids", "attention_mask"]}
                      if kind == "unigram-albert" else {"add_prefix_space": False})
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(out))
    return tok


def match_training_text_path(kind: str, spec: dict) -> dict:
    """A saved tokenizer.json (as a dict) whose typed masks read as masked words did in training.

    In training a masked word is its one piece replaced by the mask id, so typed text must give
    the same ids with no stray piece around the mask token:
    * Unigram kinds: Metaspace prepends "▁" only at the start of the text ("first"), not after
      every added token ("always" turned "[MASK]." into [MASK], ▁, .); ALBERT's WhitespaceSplit
      goes (it made "first" drop every word's "▁") and its [MASK] swallows the space before it,
      as albert-base-v2's does; runs of spaces become one, as DeBERTa's normaliser already does.
    * ModernBERT's byte-level BPE: [MASK] swallows the space before it (no stray "Ġ").
    The training corpus (single spaces) tokenises to the same ids either way.
    """
    spec = json.loads(json.dumps(spec))
    lstrip = kind in ("unigram-albert", "modernbert-bpe")
    for token in spec["added_tokens"]:
        if token["content"] == "[MASK]" and lstrip:
            token["lstrip"] = True
    if kind in ("unigram-albert", "unigram-deberta"):
        spec["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                 "split": True}
    if kind == "unigram-albert":
        spaces = {"type": "Replace", "pattern": {"Regex": "\\s{2,}|[\\n\\r\\t]"}, "content": " "}
        norm = spec["normalizer"]
        if spaces not in norm["normalizers"]:
            norm["normalizers"].insert(0, spaces)
    return spec


def _train_modernbert(files: list[str], out: Path, vocab_size: int, specials: list[str]):
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train(files, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    # [MASK] swallows the space before it, as a masked word's one token carries its own "Ġ" in
    # training ("the [MASK]" -> Ġthe, [MASK]; without lstrip a stray "Ġ" piece came first)
    raw.add_special_tokens([AddedToken("[MASK]", lstrip=True, rstrip=False, normalized=False, special=True)])
    cls_id, sep_id = raw.token_to_id("[CLS]"), raw.token_to_id("[SEP]")
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
        pad_token="[PAD]", mask_token=AddedToken("[MASK]", lstrip=True, rstrip=False),
        model_max_length=128,
    )
    tok.save_pretrained(str(out))
    return tok
