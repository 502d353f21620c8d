"""UI text of the Lessons' "Before BERT" step: the step, its timeline and its inputs' labels.

Plain data, no Gradio. The timeline states what happened in what order; the figures beside it
are the app's own, computed by ``static_vs_contextual``.
"""

from __future__ import annotations

SLUG = "before-bert"
WORD = "bank"
WORD_LABEL = "Word"
WORD_INFO = "bank, plant and cell have built-in sentences; another word needs yours"
SENTENCES_LABEL = "Your own sentences"
SENTENCES_INFO = "optional: one per line, a blank line between two senses, '# name' to name a sense"
SENTENCES_PLACEHOLDER = (
    "Empty: the built-in sentences of bank, plant or cell.\n"
    "Or your own, e.g.\nThe spring water was cold.\nThey drank from the spring.\n\n"
    "Flowers open in spring.\nSpring came early this year."
)

# the step's fields, in the order of ``copy.Step``: slug, title, text, try this, question, answer
STEP_FIELDS = (
    SLUG,
    "Before BERT: one vector per word, then one per occurrence",
    "Before BERT, a word had **one vector**, whatever its sentence: a row of a table. Two such "
    "tables are measured here: the encoder's own **input table** (the row it looks the word up in, "
    "before any layer reads the sentence) and **word2vec**, static vectors this project trained on "
    "its own corpus with gensim (the model card in `weights/word2vec/` says how). Each gives *bank* "
    "a single point for all its senses: the table lists that point's nearest words, and the note "
    "its cosine to a few words of each sense. The "
    "encoder's later layers give the word a new vector **in each sentence**: the chart measures how "
    "alike the occurrences are, same sense against different senses, layer by layer. The timeline "
    "beside it is how the field got from one to the other.",
    "Choose *plant* or *cell*, or write your own two senses of a word (a blank line between them): "
    "at which layer do the two senses separate most?",
    "ELMo also read both directions. What does BERT do that ELMo's two LSTMs, concatenated, do not?",
    "ELMo's forward LSTM never sees the words to the right and its backward LSTM never those to the "
    "left; the two meet only when their states are concatenated, after reading (shallow "
    "bidirectionality). In BERT every layer's attention reads both sides at once, so every layer "
    "builds a word's vector from its whole sentence (deep bidirectionality); the masked-LM objective "
    "is what makes that trainable, since a model that sees both sides could otherwise copy the word "
    "it must predict.",
)

TIMELINE = (
    "#### From one vector per word to BERT\n"
    "1. **One vector per word** (word2vec, GloVe): a table learnt from which words occur near which. "
    "The same vector in every sentence: *bank* by a river and *bank* with your money are one point "
    "(the flat line at 1 in the chart).\n"
    "2. **ELMo**: two one-way LSTMs, one reading left to right, one right to left; a word's vector "
    "is their two states **concatenated**. Contextual now, but each direction reads alone: "
    "**shallow** bidirectionality. Recurrent: the words are read one after another.\n"
    "3. **GPT-1**: a Transformer decoder reading **left to right**; each position sees only the "
    "words before it (the first step's storyteller).\n"
    "4. **BERT**: a Transformer encoder; in **every layer** each position reads both sides at once "
    "(**deep** bidirectionality), trained by filling blanks. Attention replaced recurrence, so all "
    "positions of a layer are computed **in parallel**, not one word after another.\n\n"
    "The chart: this encoder's vectors of the word, layer 0 (the input table plus position, "
    "normalised) to the last layer."
)
