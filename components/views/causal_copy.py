"""UI text of the detective-vs-storyteller views (Fill-mask and Attention tabs)."""

# Measured with python -m scripts.evaluate_causal (see the README): the embedded minilm-mlm on the
# whole held-out split, the same seeded masked positions with and without the causal mask.
HELDOUT_FIGURES = (
    "Measured on the held-out split (3,191 sentences the model never trained on, 11,034 masked "
    "positions, the same for both runs), the embedded `minilm-mlm` gets the masked word right "
    "**40.9 %** of the time (top-5: 60.4 %; loss 3.39 nats) when it sees both sides, and "
    "**14.0 %** (top-5: 30.8 %; loss 5.66 nats) with the causal mask: still above always "
    "guessing the most frequent words (5.5 %). The drop mixes two causes, the lost right-hand "
    "context and a way of reading (left only) the model was never trained for, so it does not "
    "measure how much of its skill comes from the right side."
)

CAUSAL_LABEL = "Causal mask: each word sees only itself and its left (the storyteller's view)"

CAUSAL_HELP = (
    "### Detective or storyteller?\n"
    "An encoder is a **detective**: at every position it reads the whole sentence, left *and* "
    "right, before it decides. A GPT-style decoder is a **storyteller**: it reads from left to "
    "right and each word sees only the words before it, which its *causal mask* enforces. Tick "
    "**Causal mask** to run the very same model with such a mask added (nothing retrained): the "
    "answers change, because the clues to the right of the blank are gone. This model was "
    "**never trained** to read that way, so part of the drop is the mismatch, not only the lost "
    "context; that is the lesson too: its skill is built on both sides. " + HELDOUT_FIGURES
)

GENERATE_HELP = (
    "## Generate with an encoder\n"
    "Can a fill-in-the-blank model write? Try it: the prompt gets a mask appended "
    "(`[CLS] prompt [MASK] [SEP]`), the model fills it, the guess is appended, and again. Every "
    "step is shown with the model's top candidates (special tokens left out; the pick is drawn "
    "from them in proportion to their probabilities, seeded).\n\n"
    "**Why it goes wrong: the factorisation.** A left-to-right model learns "
    "p(x<sub>t</sub> | x<sub>1</sub> … x<sub>t−1</sub>). By the chain rule the product of those "
    "factors *is* the probability of the whole text, p(x) = Π<sub>t</sub> p(x<sub>t</sub> | "
    "x<sub>&lt;t</sub>), so drawing one word after another draws whole texts. A masked LM learns "
    "p(x<sub>i</sub> | all the other words), with real text on **both** sides of the blank; "
    "such conditionals do not multiply into p(x). Asked for the next word, it sees a blank "
    "right before [SEP], the end of a finished sentence, and answers with what ends sentences: "
    "a full stop, again and again. A fill-in-the-blank model is not a next-word model."
)

GENERATE_PROMPT = "The weather today is"
