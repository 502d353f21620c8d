"""How much of an encoder's skill comes from the right context: held-out fill-mask accuracy
with and without a causal mask (the mask itself: ``models.mlm.causal``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..mlm.causal import causal_attention_mask, require_causal
from ..registry import catalogue
from ..runtime.loading import load_model
from ..validation import check_int, check_limit
from .evaluation import heldout_sentences
from .trainer import evaluate_masked


@dataclass(frozen=True)
class CausalEval:
    """Held-out fill-mask accuracy of one model with and without a causal mask.

    The same sentences, the same seeded masked positions (15 % of the tokens, all replaced
    by the mask token) for both runs: only what each position may look at changes.
    """

    model_key: str
    sentences: int
    positions: int  # masked positions scored
    bidirectional_top1: float
    bidirectional_top5: float
    bidirectional_loss: float  # mean -ln p(true token), nats
    causal_top1: float
    causal_top5: float
    causal_loss: float


class _CausalView:
    """A model seen through a causal mask: called as the model, with every 2-D mask made causal.

    Lets the one held-out scorer (``pretrain.evaluate_masked``) score both ways with the
    same seeded positions.
    """

    def __init__(self, model):
        self.model = model

    def eval(self):
        self.model.eval()
        return self

    def parameters(self):
        return self.model.parameters()

    def __call__(self, input_ids, attention_mask, **kwargs):
        return self.model(input_ids=input_ids, attention_mask=causal_attention_mask(self.model, attention_mask),
                          **kwargs)


def evaluate_causal(model_key: str, limit: int | None = None, seed: int = 1234) -> CausalEval:
    """Held-out top-1 / top-5 / loss of an MLM, bidirectional and causal, at the same positions.

    The split is ``data/heldout.txt`` (never trained on); ``limit``: the first N sentences
    only (1 to the split's size; None: all). ``seed``: the masking draw's, 0 to 2**31 - 1.
    A limit or seed out of range is an ``InputError``. The masked positions are those of ``evaluate_fill_mask(split="heldout")`` (same
    seed, same draw), so the bidirectional figures equal that function's.
    """
    spec = require_causal(catalogue.get_spec(model_key))
    sentences = heldout_sentences()
    sentences = sentences[:check_limit(limit, len(sentences))]
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    loaded = load_model(spec, head="mlm")
    both = evaluate_masked(loaded.model, loaded.tokenizer, sentences, seed=seed)
    left = evaluate_masked(_CausalView(loaded.model), loaded.tokenizer, sentences, seed=seed)
    return CausalEval(
        model_key=model_key, sentences=len(sentences), positions=both.n_tokens,
        bidirectional_top1=both.top1, bidirectional_top5=both.top5, bidirectional_loss=both.loss,
        causal_top1=left.top1, causal_top5=left.top5, causal_loss=left.loss,
    )
