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
