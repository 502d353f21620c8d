"""UI text, kept apart from layout code."""

TITLE = "Encoder Lab"

INTRO = (
    "# Encoder Lab\n"
    "Explore encoder-only (BERT-family) transformers: what they predict, how they read text. "
    "Everything runs on this machine; no request leaves it."
)

FILL_MASK_HELP = (
    "Type a sentence and write **[MASK]** (or **&lt;mask&gt;**, whatever the model's own mask "
    "token is) where a word is missing. The model scores every token of its vocabulary at "
    "each mask; the bars show the softmax probabilities of the top-k. With several masks, "
    "each is predicted independently in one forward pass: the model never sees its own "
    "guess for one mask while guessing another. Click a word below the text box to mask it."
)

EXAMPLES = [
    "The capital of France is [MASK].",
    "The [MASK] sat on the mat.",
    "The patient [MASK] Warfarin 5mg.",
    "She opened the [MASK] and walked into the [MASK].",
    "Paris is the [MASK] of [MASK].",
]

MODELS_HELP = (
    "Every model the app knows. **Embedded** models are installed by the project's setup "
    "and work with no internet. The others are the real checkpoints from the Hugging Face "
    "Hub: available when this machine can reach the Hub or has them in its Hugging Face "
    "cache (`python scripts/prefetch.py KEY` on a connected machine puts them there)."
)

PRETRAIN_HELP = (
    "## Watch BERT learn\n"
    "No pretrained English masked-LM that fills masks sensibly can be installed offline, so "
    "the app's default offline fill-mask model is one this project trained itself, with the very "
    "objective this app teaches: 15 % of the tokens selected, 80 % of those replaced by "
    "[MASK], 10 % by a random token, 10 % kept; a fresh draw for every batch (dynamic "
    "masking); the loss is the cross-entropy at the selected positions only. It starts "
    "from the all-MiniLM-L6-v2 encoder (real pretrained weights) with a new MLM head, and "
    "was trained on public-domain and permissively licensed English text (novels, speeches, "
    "WordNet examples, stories; see weights/minilm-mlm/MODEL_CARD.md). Below: its loss curve, its accuracy on held-out sentences it never saw, and "
    "what it guessed for a few probe sentences as training went on: from frequent "
    "tokens, to grammatical words, to sensible ones."
)

TRAIN_NOW_HELP = (
    "## Train a tiny BERT now\n"
    "A 2-layer, 128-wide BERT with random weights, trained here on the CPU for the steps "
    "you choose (batches of 32 sentences from the training sample; the same masking and "
    "optimiser as the real run). Watch the loss fall and its guesses change. One run at a "
    "time per server; **Stop** ends it."
)

MASKING_HELP = (
    "## How BERT is pre-trained: masked language modelling\n"
    "Each training sentence is corrupted: every token (never [CLS], [SEP] or padding) is "
    "*selected* with probability 15 %; a selected token is replaced by [MASK] 80 % of the "
    "time, by a random token 10 %, and kept unchanged 10 %. The model must recover the "
    "original token at every selected position, and only there. **Static** masking draws "
    "when the data is prepared and reuses the draw in later epochs; the lab shows its plain "
    "form, one draw for every epoch. Original BERT's data script made 10 copies of the data, "
    "each masked differently (`dupe_factor = 10`), so over its 40 epochs each mask came back "
    "4 times (the Compare tab's recipes table). **Dynamic** masking draws afresh each time a "
    "sentence is used (RoBERTa). **Whole-word** masking selects all pieces of a word together. "
    "The draws follow transformers' `DataCollatorForLanguageModeling` exactly (same seed, same "
    "masks), so what you see is what a trainer does; one difference: with whole words, "
    "transformers 5 forces 100 % [MASK], while this lab keeps your split, per piece, as "
    "Google's original BERT code did."
)

MASKING_EXAMPLE = (
    "He sat on the bank of the river and watched the water. Later he went to the bank to "
    "deposit his unbelievably large paycheck."
)

LOSS_HELP = (
    "## The MLM loss, where it is computed\n"
    "The chosen model reads the corrupted input. At each selected position its logits go "
    "through a softmax over the whole vocabulary; the loss there is −log p(original token) "
    "in nats, and the training loss is the mean over the selected positions only (the "
    "positions not selected, 85 % of them at the default rate, cost nothing). Compare the "
    "policies: with 100 % [MASK] every predicted position shows the [MASK] token, which "
    "fine-tuning and use never show: the model learns to predict well only where it sees "
    "[MASK], and nothing asks it to build a useful vector for a real word at its own position "
    "(the train–test mismatch the 10 % random / 10 % kept soften: there the real, or a wrong, "
    "word stands where the answer is asked for); with everything kept the task is trivial "
    "copying and teaches nothing."
)

STATS_HELP = (
    "## Check the numbers\n"
    "Draw the policy many times over 1,000 built-in sentences (seeded) and compare the "
    "observed selection and replacement rates with the configured ones."
)

NSP_HELP = (
    "## Next sentence prediction\n"
    "The original BERT was also trained to tell whether sentence B really follows sentence A "
    "(50 % of pairs) or is a random sentence. Only bert-base and bert-large ship that head "
    "(online models); the embedded models have none. RoBERTa dropped NSP: trained on longer "
    "contiguous text without it, it did as well or better, and later encoders followed."
)

NSP_A = "The weather was cold and grey all morning."
NSP_B = "By noon it had started to snow."
