"""UI text of the Masking lab's "show the arithmetic" views (MLM and NSP losses)."""

ARITHMETIC_HELP = (
    "### Show the arithmetic\n"
    "The loss at one position, number by number. The model gives every word of its "
    "vocabulary a **logit** z (any real number); the softmax turns them into probabilities: "
    "p(w) = exp(z<sub>w</sub>) / Σ<sub>v</sub> exp(z<sub>v</sub>), where the **denominator** "
    "sums over the *whole* vocabulary. The loss is −ln p(original word), in nats: 0 when the "
    "model is sure and right, large when it gave the right word little probability. "
    "**The textbook example** uses four made-up logits (cat 3.0, dog 1.5, mat 0.2, the 0.1); "
    "**a real position** takes the model's logits at one selected position of the epoch above "
    "(the top words, the original word, and the rest of the model's own vocabulary folded into "
    "one row; the last row says how many words the denominator sums over: 8,192 for the mini "
    "zoo, 30,522 for BERT's uncased WordPiece, about 50,000 for RoBERTa)."
)

ARITHMETIC_SOURCES = ["the textbook example", "a real position"]

NSP_LOSS_HELP = (
    "**NSP's loss.** Training compares P(IsNext) with the true label (half of the pairs really "
    "follow, half are random) by **binary cross-entropy**: −ln P(IsNext) when B follows A, "
    "−ln (1 − P(IsNext)) when it does not. Choose the label and see the loss, and the two "
    "logits recomputed by hand from the [CLS] vector through the pooler (NSP models only)."
)

NSP_LABELS = [("IsNext: B really follows A", True), ("NotNext: B is a random sentence", False)]
