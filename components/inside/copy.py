"""Text of the "Inside one layer" tab (no code)."""

TAB_LABEL = "Inside one layer"

HELP = """\
### Inside one layer: one forward pass, step by step
Every token gets a **query**, a **key** and a **value**; the scores are **QKᵀ / √d_head**
(d_head: the width of one head's queries and keys);
**softmax** turns each row into weights; the head's output is the **weighted sum of the
values**. Then the block: the heads side by side → output projection → add the input and
normalise → feed-forward → add and normalise. Pick a model, a text, a layer, a head and a
token, then walk the steps with **Previous / Next**: each step shows its values, its shape
and the one formula it applies; the table below gives the numbers that make the chosen
token's row of attention.

Every number is read from the model itself (hooks on its own modules, one forward pass),
and what is recomputed here is checked against what the model returns: the weights against
`output_attentions`, the layer's output against `hidden_states`, the head's logits against
the model's logits (the **Checks** list). Steps marked ★ are the family's own: RoBERTa's
positions offset by the padding index, DistilBERT's missing token types, ALBERT's factorised
embedding (and ELECTRA's, where its embeddings are narrower than its layers, as in
ELECTRA-small), ALBERT's one layer reused by every layer, DeBERTa's three
score terms, ModernBERT's rotary positions, local window and GeGLU.
"""

EXAMPLE_TEXT = "The old mill by the [MASK] turned slowly in the evening light."

TOKEN_LABEL = "Token position (blank: the first [MASK], else the first word)"
STEP_LABEL = "Step"
RUN_LABEL = "Run the pass"

# The steps every encoder has, in order (the dropdown's choices before a model has run).
COMMON_STEPS = (
    ("Input to the layer", "layer_input"), ("Query", "query"), ("Key", "key"), ("Value", "value"),
    ("Raw scores", "raw_scores"), ("Scaled and masked scores", "scaled_scores"),
    ("Attention weights", "weights"), ("Weighted values", "weighted_values"),
    ("All heads side by side", "heads_concatenated"), ("Output projection", "output_projection"),
    ("Residual sum", "attention_residual"), ("Add & LayerNorm", "attention_layernorm"),
    ("Hidden activation", "ffn_hidden"), ("Feed-forward output", "ffn_output"),
    ("Residual sum (feed-forward)", "ffn_residual"), ("Output of the layer", "layer_output"),
)

ROW_HELP = """\
**The chosen token's row, number by number.** Its query against each key (q·k), divided by
√d_head (DeBERTa: the sum of its three terms, divided by √(3·d_head)), softmax over the row, then each weight times the
value vectors: the last row adds them up, which is the token's output of this head (the
first dimensions shown)."""

NORMS_HELP = "Length of each token's vector after every layer (0 = the embeddings), for the whole pass."

GRAD_HELP = """\
### Gradients under MLM
The masked-LM loss counts only the masked positions, yet its gradient reaches **every**
input token, because attention mixes every token into the masked ones. Below: the length of
∂loss/∂(input embedding) for each token (masked in orange), and ∂loss/∂logits at each
position, which is exactly zero wherever a token is not masked: its own prediction is not in
the loss. Write the sentence **without** [MASK] (its own tokens are the labels) and give
the token positions to mask. One coordinate of the autograd gradient is checked against a
finite difference of the same loss."""

GRAD_TEXT = "The cat sat on the mat near the old house."
GRAD_MASKED_LABEL = "Positions to mask (token indices, comma-separated; blank: the middle word)"
GRAD_BUTTON = "Follow the gradient"

CHECKS_TITLE = "**Checks** (recomputed here vs returned by the model)"

# The tab's sections (sub-tabs: only the one on screen is drawn, so the tab opens quickly).
SECTION_STEPS = "Step by step"
SECTION_GRADIENTS = "Gradients under MLM"
