"""UI text of the Attention tab, kept apart from its layout code."""

from .plots import BERTVIZ_MAX_TOKENS, VIEW_MAX_TOKENS

HELP = (
    "## Where does each token look?\n"
    "In every layer, each **head** gives every token (a *query*) a probability distribution "
    "over all the tokens of the input (the *keys*): one **row** of the heatmap is that "
    "distribution, so it sums to 1, and the token's new representation is the weighted mix "
    "of the others' values with those weights. An encoder has **no causal mask**: a token "
    "may look right as well as left, at every position of the whole input (a decoder such as "
    "GPT hides the future; BERT does not, which is why it is trained by filling masks rather "
    "than by predicting the next word; tick **Causal mask** to see what hiding the right side "
    "would look like).  \n"
    "Try the **bank** pair: *I sat by the river bank.* / *I deposited cash at the bank.* In "
    "layers where *bank* puts weight on *river* or on *cash*, the model is gathering the "
    "context that tells the two senses apart. Many heads do simpler things: look at the "
    "previous or the next token, at [SEP] (often a \"no-op\" place to park attention), or at "
    "[CLS]. Attention weights show where information *may* flow, not why the model decides."
)

CAUSAL_NOTE = (
    "**Causal mask added** (the same weights; the model was never trained this way): each token "
    "sees only itself and the tokens to its left, so every weight right of the diagonal is "
    "exactly 0 (the empty upper triangle), and the first token can only look at itself."
)

INPUT_EMBEDDINGS_HELP = (
    "## What the first layer reads: input = token + position + segment\n"
    "Before any attention, each token becomes the **sum of three learned vectors**: its own "
    "row of the token table (the same wherever the word stands), the row of its **position** "
    "(0, 1, 2, …: the only thing that tells the model word order, since attention itself "
    "ignores order), and the row of its **segment** (A for the first text, B for the second: "
    "how BERT tells the two sentences of a pair apart). A LayerNorm follows, and that is "
    "layer 0. Below, the three vectors of every token (first dimensions only, one colour "
    "scale), their sum, and a check that the sum is exactly what the model computed. Try one "
    "text, then add a second: only the segment column changes for B's tokens. RoBERTa-style "
    "models have one segment row only; DistilBERT has none; models with relative or rotary "
    "positions (DeBERTa-v3, ModernBERT) have no position table to add."
)

# After INPUT_EMBEDDINGS_HELP, with the picker's models of those families.
NO_POSITION_TABLE_NOTE = (
    " In the picker: {}. For them this view says so instead of drawing; the tab's other views "
    "work with them."
)

PAIR_NOTE = (
    "With a second text the two are joined in the model's own pair format ([CLS] A [SEP] "
    "B [SEP] for BERT, &lt;s&gt; A &lt;/s&gt;&lt;/s&gt; B &lt;/s&gt; for RoBERTa). Segment ids come from the "
    "tokenizer's token_type_ids where it makes them; RoBERTa-style tokenizers have none, so "
    "the segments are read from the special-token positions."
)

VIEWS_HELP = (
    "**Heatmap**: one head, the average over a layer's heads, or the **attention rollout** "
    "(Abnar & Zuidema 2020: each layer's head-average plus the identity for the residual "
    "connection, rows renormalised, multiplied through the layers: how much each input "
    "token flows into each position by that layer). **Grid**: every layer (rows) × every "
    "head (columns) at a glance; darker = more weight (square-root scale, each pixel the "
    f"largest weight of its block). Click a cell to open that head. Both show at most "
    f"{VIEW_MAX_TOKENS} tokens; a longer input shows its first {VIEW_MAX_TOKENS}.  \n"
    "On the mini zoo: **mini-modernbert** with a long text shows its local layers (L1 and L3) as a "
    "band, no weight beyond 16 tokens either side, between global layers L0 and L2; "
    "**mini-albert**'s four layers are one shared layer run four times (the grid's rows differ "
    "only because each layer reads the previous one's output)."
)

STATS_HELP = (
    "**Per-head statistics** (averages over the rows): entropy in bits (0 = every row on "
    "one token; entropy / max = 1 for a uniform head), the share of weight on [CLS], on "
    "[SEP], on the token itself, on the previous and the next token, and the mean of the "
    "rows' largest weight. Sort with the ⋮ button of a column's header (it shows on hover): "
    "**Sort descending** or **Sort ascending**; filters keep heads whose share is at least 0.5 "
    "(broad: entropy / max at least 0.75). Click a row to open that head."
)

BERTVIZ_HELP = (
    "**bertviz** (Jesse Vig's library) draws the same weights as lines: the head view "
    "(one layer, every head in its own colour; hover a token) and the model view (every "
    "layer × head; click one to enlarge). Its JavaScript (require.js, d3, jQuery) is served "
    f"by this app, not by a CDN. It ships every weight as text, so it shows at most "
    f"{BERTVIZ_MAX_TOKENS} tokens. The neuron view is not offered: it needs bertviz's own "
    "copies of old BERT/GPT-2 model classes loaded from the Hub."
)

LIBS_MISSING = (
    "bertviz's JavaScript libraries (require.js, d3, jQuery) are missing from this server's "
    "copy of the app, or differ from the pinned versions, so its views cannot be drawn here. "
    "Restore assets/vendor/ from the repository and restart the app. The heatmap, grid and "
    "statistics work without them."
)

EXAMPLES = [
    ["I sat by the river bank.", "I deposited cash at the bank."],
    ["The animal didn't cross the street because it was too tired.", ""],
    ["The cat sat on the mat.", "It was warm there."],
    ["She said that the keys to the cabinet are on the table.", ""],
]

# The grid image's text alternative (screen readers; the image is also a button).
GRID_ALT = (
    "Grid of attention heatmaps, one cell per layer (rows) and head (columns); click a cell "
    "to open that head in the heatmap beside it, which lists every weight on hover."
)

# The tab's sections (sub-tabs: only the one on screen is drawn, so the tab opens quickly).
SECTION_HEATMAPS = "Heatmaps and statistics"
SECTION_BERTVIZ = "bertviz"
SECTION_INPUT = "Token + position + segment"
