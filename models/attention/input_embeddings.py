"""What the first layer reads: input = token + position + segment embedding.

A BERT-style model looks up three vectors per token in three learned tables (the token's
own, its position's, its segment's: 0 for the first text, 1 for the second) and adds them;
a LayerNorm (and dropout, off at inference) follows, and that is layer 0's output.

The three vectors are read as the model computes them (forward hooks on its own three
embedding tables, which also give the row each token used; only the calling thread's calls
are kept, since the app's threads share the model) and the sum is checked against
the input of the model's embedding LayerNorm. Families without an absolute position table
(DeBERTa-v3's relative positions, ModernBERT's rotary ones) have nothing to show here and
raise a ``CapabilityError`` that says where their positions go instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import CapabilityError
from ..registry import catalogue
from ..runtime.capture import Recorder
from ..runtime.loading import check_token_count, load_model
from ..validation import check_texts


# Registry families whose positions enter inside attention, not as a table added here.
NO_POSITION_TABLE = frozenset({"deberta-v2", "modernbert", "modernbert-decoder"})


@dataclass(frozen=True, eq=False)
class InputEmbeddings:
    """Per token: its three input vectors, their sum, and the model's own pre-LayerNorm input."""

    model_key: str
    text: str
    text_pair: str | None
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]  # rows of the token table
    position_ids: tuple[int, ...]  # rows of the position table (RoBERTa's start at 2)
    segment_ids: tuple[int, ...] | None  # rows of the segment table; None: the model has none
    token: np.ndarray  # (T, d) float32
    position: np.ndarray  # (T, d)
    segment: np.ndarray | None  # (T, d); None when the model has no segment table (DistilBERT)
    total: np.ndarray  # (T, d) token + position + segment
    model_input: np.ndarray  # (T, d) what the model's embedding LayerNorm received
    normalized: np.ndarray  # (T, d) what that LayerNorm gave: BERT's layer-0 hidden state
    segment_rows: int | None = None  # rows of the segment table (type_vocab_size: 1 for RoBERTa's)

    @property
    def max_difference(self) -> float:
        """max |sum − the model's pre-LayerNorm input|: 0 up to float rounding."""
        return float(np.abs(self.total - self.model_input).max())


def _tables(model):
    """(word, position, segment or None, LayerNorm) modules of a BERT-style embedding layer."""
    emb = getattr(model, "embeddings", None)
    word = getattr(emb, "word_embeddings", None)
    position = getattr(emb, "position_embeddings", None)
    norm = getattr(emb, "LayerNorm", None)
    if word is None or norm is None or not isinstance(position, torch.nn.Embedding):
        return None
    segment = getattr(emb, "token_type_embeddings", None)
    return word, position, segment, norm


def input_embeddings(model_key: str, text: str, text_pair: str | None = None) -> InputEmbeddings:
    """The token, position and segment vectors of every token, and their sum.

    With ``text_pair`` the second text's tokens use segment 1. The sum is what the model's
    embedding LayerNorm receives (``max_difference`` says by how much they differ: float
    rounding only). Raises ``CapabilityError`` for models without a table of absolute
    positions.
    """
    spec = catalogue.get_spec(model_key)
    text, text_pair = check_texts(text, text_pair)
    loaded = None if spec.family in NO_POSITION_TABLE else load_model(spec, head="base")
    tables = None if loaded is None else _tables(loaded.model)
    if tables is None:
        raise CapabilityError(
            f"{spec.display_name} ({spec.key}, family {spec.family}) has no table of absolute "
            "position vectors to add to its token vectors: its positions enter inside attention "
            "(DeBERTa's relative positions, ModernBERT's rotary embeddings). Choose a BERT-style "
            "model, e.g. " + ", ".join(s.key for s in catalogue.SPECS if s.family in ("bert", "roberta"))[:200] + "."
        )
    word, position, segment, norm = tables
    tokenizer = loaded.tokenizer
    enc = tokenizer(text, text_pair, truncation=False, return_tensors="pt", verbose=False)
    check_token_count(loaded, enc["input_ids"].shape[1])
    inputs = {k: v.to(loaded.device) for k, v in enc.items() if k in tokenizer.model_input_names}
    # The model is shared by the app's worker threads: the Recorder keeps only this thread's calls
    # (another request's batch through the same tables while these hooks are on is not ours).
    recorder = Recorder().watch(word, position, norm, segment)
    with recorder, torch.inference_mode():
        loaded.model(**inputs)
    batch_shape = enc["input_ids"].shape

    def rows(module, output=True) -> np.ndarray:  # (T, d) float32, batch of 1
        vectors = recorder.output(module) if output else recorder.input(module)
        return vectors.expand(batch_shape[0], *vectors.shape[-2:])[0].float().cpu().numpy()

    def ids(module) -> tuple[int, ...]:
        used = recorder.input(module).expand(batch_shape)  # a (1, T) row shared by the batch
        return tuple(int(i) for i in used[0].tolist())

    token, pos = rows(word), rows(position)
    seg = rows(segment) if segment is not None and recorder.times_called(segment) else None
    total = token + pos + (seg if seg is not None else 0.0)
    return InputEmbeddings(
        model_key=model_key, text=text, text_pair=text_pair,
        tokens=tuple(tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())),
        token_ids=ids(word), position_ids=ids(position),
        segment_ids=ids(segment) if seg is not None else None,
        token=token, position=pos, segment=seg, total=total.astype(np.float32),
        model_input=rows(norm, output=False), normalized=rows(norm),
        segment_rows=int(segment.num_embeddings) if seg is not None else None,
    )
