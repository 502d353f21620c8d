"""UI text of the Compare tab, kept apart from layout code."""

COMPARE_HELP = (
    "## The BERT family side by side\n"
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
    "seed, the same shape (4 layers, 128 wide, 4 heads, FFN 512, an 8,192-token vocabulary "
    "trained for each tokenizer kind) and **the same number of training tokens**. What "
    "differs is only the recipe: objective, masking, tokenizer, attention and sharing. The "
    "score does not depend on the tokenizer: 15 % of the words of each held-out sentence "
    "(the same words for every model) have all their pieces masked, and a word counts only "
    "when every piece is the top-1 guess. ELECTRA's score is its generator's (a quarter of "
    "the width: the discriminator cannot fill masks). ELECTRA and DistilBERT do extra work per "
    "token (a generator; a teacher's forward pass): the FLOPs count the first training step's "
    "forward and backward in one count, the teacher's forward included, and *tokens/s* is "
    "training tokens over the run's wall-clock seconds. The chart's lower panel is each "
    "family's own training loss (DistilBERT's triple loss, ELECTRA's MLM + 50 × RTD), so its "
    "level is not comparable across families; the upper panel's score is. "
    "**Caveat:** a few million tokens is a tiny fraction of any published run; these "
    "miniatures show each idea's direction at this scale, not the published models' quality."
)
# What the shipped run (weights/zoo, trained 2026-11-23; figures from its record.json files) showed.
ZOO_FINDINGS = (
    "**What the shipped run showed** (3.0 M tokens each, about 1,700 steps of 16 sequences, "
    "7.6–11.6 CPU minutes and 6.3–11.0 wall minutes per family on 2 cores; 6.4–8.0 MFLOPs "
    "per token, DistilBERT's with its teacher's forward the lowest, DeBERTa's the highest). "
    "Two families left the *unigram plateau*, where every guess is a frequent word: "
    "**DeBERTa** (16.5 % of held-out words right) and **ModernBERT** (19.1 %). The five "
    "others stayed on it: BERT 5.5 %, "
    "ALBERT 5.9 %, DistilBERT 5.2 %, RoBERTa 4.4 %, ELECTRA's generator 3.9 % (their top "
    "guesses for most blanks are *the*, *of* and commas). The two that "
    "learnt are the two without learnt absolute position embeddings (DeBERTa: relative "
    "positions; ModernBERT: rotary), and ModernBERT also masks 30 % instead of 15 %; this run "
    "does not tell which of their differences mattered. The sentence-pair heads: BERT's NSP "
    "learnt something (69.3 % on held-out pairs, 53.0 % by always guessing the majority); "
    "ALBERT's harder sentence-order task did not (49.3 %, majority 50.7 %). ELECTRA's "
    "discriminator gives replaced and original tokens the same probability (0.146 and 0.146): "
    "a generator still on the plateau makes replacements it cannot yet tell apart. The "
    "everyday cloze set is too hard for all of them at this budget (at most 3 of 36 in the top 5)."
)
ZOO_MISSING = "The mini zoo is not trained on this checkout yet: run `python -m scripts.train_zoo`."
BENCH_WAITING = "Press “Time forward passes” to time the chosen models (a longer job: it stays behind its button)."
