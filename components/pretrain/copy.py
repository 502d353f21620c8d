"""The Pre-training tab's text."""

PRETRAIN_HELP = (
    "## Watch BERT learn\n"
    "No pretrained English masked-LM that fills masks sensibly can be installed offline, so "
    "the app's default offline fill-mask model is one this project trained itself, with the very "
    "objective this app teaches: 15 % of the tokens selected, 80 % of those replaced by "
    "[MASK], 10 % by a random token, 10 % kept; a fresh draw for every batch (dynamic "
    "masking); the loss is the cross-entropy at the selected positions only. It starts "
    "from the all-MiniLM-L6-v2 encoder (real pretrained weights) with a new MLM head, and "
    "was trained in two CPU stages on public-domain and permissively licensed English text (novels, "
    "speeches, WordNet examples, stories), then, in a third stage on a GPU, also on GCIDE's dictionary "
    "definitions (GPL-2+) and facts written out from country and element records, and in a fourth CPU "
    "stage also on sentences of common facts and everyday scenes written by this project (each "
    "probe's fact stated there only in other words); see "
    "weights/minilm-mlm/MODEL_CARD.md. Below: its loss curve, its accuracy on held-out sentences it never saw, and "
    "what it guessed for a few probe sentences as training went on: at step 0 unrelated words (its new "
    "head starts random); after 30 steps the most frequent tokens, “,” “.” and “the”, in every blank; "
    "by step 300 nouns in four of its six blanks (“wall”, “night”, “food”, “person”), fitting or not; "
    "later the answers that fit (“paris” for the capital of France from step 17,139 on)."
)

TRAIN_NOW_HELP = (
    "## Train a tiny BERT now\n"
    "A 2-layer, 128-wide BERT with random weights, trained here on the CPU for the steps "
    "you choose (batches of 32 sentences from the training sample; the same masking and "
    "optimiser as the real run). Watch the loss fall and its guesses change. One run at a "
    "time per server; **Stop** ends it."
)
LIVE_WAITING = "Press “Train a tiny BERT now” to watch its loss fall here (training stays behind its button)."
