"""The Fill-mask tab's text."""

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

# The Plotly chart of the same bars, drawn when opened (hover, zoom, PNG / SVG / HTML export).
CHART_ACCORDION = "The same bars as a chart (hover, zoom, PNG / SVG / HTML export)"
