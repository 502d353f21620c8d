"""UI text of the Compare tab, kept apart from layout code."""

COMPARE_HELP = (
    "## The BERT family side by side\n"
    "Five sections: the same input through several models, what they know (a probe set of "
    "facts or everyday sentences), their architectures and training recipes, their speed "
    "against sequence length, and the mini zoo (seven families trained here under one budget)."
)

# The tab's sections (sub-tabs: only the one on screen is drawn, so the tab opens quickly).
SECTION_SAME_INPUT = "Same input"
SECTION_KNOWLEDGE = "What they know"
SECTION_ARCHITECTURES = "Architectures and recipes"
SECTION_SPEED = "Speed vs length"
SECTION_ZOO = "Mini zoo"

ARCHITECTURE_HELP = (
    "### Architectures, computed from their configs\n"
    "Every fact in the first table is computed here, not typed in: each architecture is "
    "built with transformers **on the meta device** (tensor shapes only, no weights, no "
    "memory) from the checkpoint's official `config.json` (kept in `data/configs/`) or the "
    "embedded model's own folder, and the parameters are counted off the modules. "
    "*params (encoder)* is what `AutoModel` builds (the bare encoder, with the pooler where "
    "there is one); the MLM head is counted apart, its decoder tied to the word embeddings "
    "and so counted once. ALBERT and ELECTRA project a narrow embedding up to the hidden "
    "size (counted under *layers & norms*); ALBERT's 12 layers share one set of weights."
)

RECIPES_HELP = (
    "### How each family was pre-trained (from the papers)\n"
    "A separate table, read from `data/training_recipes.json`: what each paper reports. "
    "*not transcribed* means the figure was not copied here from the paper (which may or may "
    "not give it); the notes say where a released checkpoint differs from the paper's run."
)

SAME_INPUT_HELP = (
    "### Same input, several models\n"
    "Write each mask once, as **[MASK]** or **&lt;mask&gt;**: each model reads its own mask "
    "token. Models with no MLM head or not available on this machine are listed with the "
    "reason; the comparison runs on the others. Agreement compares words with the "
    "WordPiece **##**, byte-level BPE **Ġ** and SentencePiece **▁** markers removed."
)

SPEED_HELP = (
    "### Speed and memory by architecture\n"
    "A forward pass of the bare encoder on this machine's device, on random token ids "
    "exactly as long as each length (no padding), after warm-up: the median of several "
    "timed runs, taken in rounds over all lengths. Models not available here are built "
    "from their config with **random weights** (speed does not depend on the values) and "
    "marked *random-init: timing only* (dashed lines): their outputs mean nothing. On a CPU "
    "runs are kept small (batch × length ≤ 2,048 tokens, 20 s of timing per model) and "
    "timings move with whatever else the machine is doing. ModernBERT's local attention "
    "and unpadding pay off on a GPU with a kernel that skips the masked-out work (flash "
    "attention) and on padded batches; with PyTorch's SDPA on a CPU its sliding window is a "
    "mask over full attention, so expect no gain here."
)

LENGTH_CHOICES = ["32", "64", "128", "256", "512", "1024", "2048"]
COMPARE_EXAMPLE = "The capital of France is [MASK]. Paris is a <mask> city."

ZOO_HELP = (
    "### Same data, same budget: the mini zoo\n"
    "Seven miniatures **trained by this project** (not the published checkpoints), one per "
    "family, each the real transformers class with its family's defining ideas: the same "
    "corpus (public-domain and permissive English text, `data/corpus_sources.json`), the same "
    "seed, the same shape (4 layers, 128 wide, 4 heads, FFN 512 (ModernBERT: GeGLU's input "
    "projection, 2 × 256), an 8,192-token vocabulary trained for each tokenizer kind; DistilBERT "
    "half the layers, from its teacher) and **the same "
    "number of training tokens**. What "
    "differs is only the recipe: objective, masking, tokenizer, attention and sharing. The "
    "score does not depend on the tokenizer: 15 % of the words of each held-out sentence "
    "(the same words for every model) have all their pieces masked, and a word counts only "
    "when every piece is the top-1 guess. ELECTRA's score is its generator's (the "
    "discriminator cannot fill masks; the table's *score of* gives the generator's width). Each family got the same tuning search "
    "(its grid and trials on each card; the table's *tuning chosen*); the dotted lines are each "
    "tokenizer's **word-frequency baseline**, what guessing by frequency alone scores on the "
    "same words: a model near its line has not learnt to use context. The curves are scored "
    "while training on the tuning split's words; the table's score (the stars) is the final model "
    "on the other held-out words, so the two need not agree exactly. ELECTRA and DistilBERT do extra work per "
    "token (a generator; a teacher's forward pass): the FLOPs count the first training step's "
    "forward and backward in one count, the teacher's forward included, and *tokens/s* is "
    "training tokens over the run's wall-clock seconds. The chart's lower panel is each "
    "family's own training loss (DistilBERT's triple loss, ELECTRA's MLM + 50 × RTD), so its "
    "level is not comparable across families; the upper panel's score is. "
    "**Caveat:** tens of millions of tokens is a tiny fraction of any published run; these "
    "miniatures show each idea's direction at this scale, not the published models' quality."
)
DECODER_HELP = (
    "### The storyteller beside the zoo: mini-decoder\n"
    "Not an encoder family: the decoder twin of `mini-modernbert`, trained by the same script on the same "
    "corpus, tokenizer, shape, seed and number of training tokens, on next-token prediction instead of masked "
    "pieces. Its curve is its own task's loss (the next piece from the pieces before it), not comparable with "
    "the chart above. The button measures the pair side by side on held-out tasks, each row with its baseline "
    "(minutes the first time; kept on disk after)."
)
DECODER_MISSING = "mini-decoder is not trained on this checkout yet: run `python -m scripts.zoo train --families mini-decoder` (docs/zoo.md)."
ZOO_MISSING = "The mini zoo is not trained on this checkout yet: run `python -m scripts.zoo search`, then `python -m scripts.zoo install` (docs/zoo.md)."
BENCH_WAITING = "Press “Time forward passes” to time the chosen models (a longer job: it stays behind its button)."
