"""Text of the "Which parts matter" tab (no code)."""

from models import MAX_PATCH_POSITIONS

TAB_LABEL = "Which parts matter"

HELP = """\
### Which parts matter: knock parts out, move states across, read every layer
Attention maps show where a model looks; these views show which parts **cause** its answer.
Each one changes the model's own pass through hooks on its modules (the same for every
family) and reads the blank again. The target is read at the **first** mask; a target word
of several pieces is scored by its **first piece** (the status line says so).
"""

SECTION_KNOCKOUT = "Knock out heads"
SECTION_IMPORTANCE = "Head importance"
SECTION_LENS = "When does the model know?"
SECTION_TRACE = "Causal trace"

KNOCKOUT_HELP = """\
Click cells of the grid (a row per layer, a column per head) to knock those heads out, then
see the blank's guesses with every head and without them. **Zero**: the head's slice of the
input to the layer's attention output projection is set to 0, in that layer only (ALBERT
reuses one layer module: only that layer's pass through it changes). **Mean**: the slice is
set to its mean over the text's positions. With no head chosen, both bars are the same."""

HEADS_LABEL = "Knocked-out heads (layer:head, comma-separated; clicking the grid writes them)"
GRID_LABEL = "Heads: click a cell to knock it out (✕) or bring it back"
MODE_LABEL = "Knock out by"
MODES = [("setting it to zero", "zero"), ("its mean over positions", "mean")]
TARGET_LABEL = "Target word (empty: the model's top guess)"
KNOCKOUT_BUTTON = "Knock out"
CLEAR_BUTTON = "Bring every head back"

IMPORTANCE_HELP = """\
Every head knocked out alone (set to zero), one at a time: the colour is the change in
log p(target) at the first mask. Blue: the answer lost probability without that head (the
head helped); red: it gained. One batch row per head, so the whole map is a few forwards."""
IMPORTANCE_BUTTON = "Map every head"

LENS_HELP = """\
The **logit lens**: at the first mask, the embeddings and the output of every layer are
read through the model's own MLM head, applied exactly as the model applies it after its
last layer. The last row is the model's answer (fill-mask's); the table shows from which
layer that answer is already the top guess. Pick a second model to compare."""
LENS_COMPARE_LABEL = "Compare with (optional)"
LENS_BUTTON = "Read every layer"

TRACE_HELP = f"""\
**Causal tracing.** Two texts of the same token length: a clean one and a corrupt one that
changes a word. For each layer and position, the clean run's state there is copied into the
corrupt run; the colour is p(target) at the mask afterwards. Bright cells carry the clean
answer. Texts longer than {MAX_PATCH_POSITIONS} tokens are patched at {MAX_PATCH_POSITIONS}
positions (those where the texts differ and the mask first), and the status line says so."""
CLEAN_LABEL = "Clean text"
CORRUPT_LABEL = "Corrupt text (same number of tokens)"
PRESET_LABEL = "Presets of the same length for this model"
TRACE_BUTTON = "Trace"

EXAMPLE_TEXT = "The capital of France is [MASK]."
IMPORTANCE_TEXT = "The old mill by the [MASK] turned slowly."
# (clean, corrupt): the picker offers those whose two texts tokenize to the same length for the model
PRESETS = (
    ("The capital of France is [MASK].", "The capital of Italy is [MASK]."),
    ("The capital of Japan is [MASK].", "The capital of Spain is [MASK]."),
    ("Paris is the capital of [MASK].", "Rome is the capital of [MASK]."),
    ("The doctor said that [MASK] would be late.", "The nurse said that [MASK] would be late."),
    ("He drank a cup of hot [MASK].", "He ate a bowl of hot [MASK]."),
    ("The cat chased the [MASK] across the yard.", "The dog chased the [MASK] across the yard."),
)
