"""UI text of the Masking lab's "show the arithmetic" views (MLM and NSP / SOP losses)."""

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
    "**The pair head's loss (NSP or SOP).** Training compares the head's probability with the "
    "true label by **binary cross-entropy**. NSP (`mini-bert`, BERT) gives P(IsNext): half of "
    "the pairs really follow, half have a random B. SOP (`mini-albert`) gives P(in order): both "
    "sentences are real neighbours, half of the pairs swapped. The loss is −ln P when the label "
    "is IsNext / in order, −ln (1 − P) when it is NotNext / swapped. Choose the label and see "
    "the loss of the chosen model's own head, and its two logits recomputed by hand from the "
    "[CLS] vector through the pooler."
)

NSP_LABELS = [("B follows A as written (NSP: IsNext; SOP: in order)", True),
              ("It does not (NSP: NotNext, a random B; SOP: swapped)", False)]
