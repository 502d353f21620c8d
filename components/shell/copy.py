"""App-wide text: the title and the introduction above the tabs."""

TITLE = "Encoder Lab"

INTRO = (
    "# Encoder Lab\n"
    "Explore encoder-only (BERT-family) transformers: what they predict, how they read text. "
    "Everything runs on this machine; no request leaves it."
)
