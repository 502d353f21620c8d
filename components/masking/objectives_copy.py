"""UI text of the Masking lab's other pre-training heads: NSP, SOP and replaced-token detection."""

PAIR_HELP = (
    "## Sentence pairs: next-sentence prediction (BERT) and sentence order (ALBERT)\n"
    "BERT was also trained to tell whether sentence B really follows sentence A or is a "
    "random sentence from elsewhere (50 % each): **next-sentence prediction (NSP)**. The "
    "score comes from the [CLS] position's vector, through the pooler (a dense layer + tanh), "
    "into a two-way classifier. RoBERTa dropped NSP: trained on longer contiguous text "
    "without it, it did as well or better. ALBERT replaced it with **sentence-order "
    "prediction (SOP)**: both sentences are real neighbours, and the model must tell whether "
    "they are in their original order or swapped, which a topic shortcut cannot solve. "
    "Offline, `mini-bert` (NSP) and `mini-albert` (SOP) are the project's own miniatures; "
    "their accuracy on held-out pairs (text never trained on) is shown with each answer. "
    "`mini-bert`'s answer comes with `mini-bert-nsp`'s where it is here: the same model's head "
    "trained on past the zoo's budget with random B's of the same kind of text."
)
PAIR_A = "The weather was cold and grey all morning."
PAIR_B = "By noon it had started to snow."

RTD_HELP = (
    "## Replaced-token detection (ELECTRA)\n"
    "ELECTRA trains two models together: a small **generator** fills masked positions (a "
    "masked LM), and the **discriminator** reads the result and says, for *every* token, "
    "whether it is the original or a replacement. Every token gives a training signal, not "
    "only the 15 % that were masked. Type a sentence with a wrong word in it, or let the "
    "generator swap some words, and see each token's P(replaced): the number is printed "
    "under each token, and replaced tokens are marked, so the view reads without colour."
)
RTD_EXAMPLE = "The chef cooked a delicious meal for the guests."
