"""The Masking lab tab's text."""

# the tab's sections (sub-tabs), in order
SECTION_CORRUPT = "Corrupt a text"
SECTION_LOSS = "The MLM loss"
SECTION_STATS = "Check the numbers"
SECTION_PAIR = "Sentence pairs"
SECTION_RTD = "Replaced tokens"

MASKING_HELP = (
    "## How BERT is pre-trained: masked language modelling\n"
    "Each training sentence is corrupted: every token (never [CLS], [SEP] or padding) is "
    "*selected* with probability 15 %; a selected token is replaced by [MASK] 80 % of the "
    "time, by a random token 10 %, and kept unchanged 10 %. The model must recover the "
    "original token at every selected position, and only there. **Static** masking draws "
    "when the data is prepared and reuses the draw in later epochs; the lab shows its plain "
    "form, one draw for every epoch. Original BERT's data script made 10 copies of the data, "
    "each masked differently (`dupe_factor = 10`), so over its 40 epochs each mask came back "
    "4 times (the Compare tab's recipes table). **Dynamic** masking draws afresh each time a "
    "sentence is used (RoBERTa). **Whole-word** masking selects all pieces of a word together. "
    "The draws follow transformers' `DataCollatorForLanguageModeling` exactly (same seed, same "
    "masks), so what you see is what a trainer does; one difference: with whole words, "
    "transformers 5 forces 100 % [MASK], while this lab keeps your split, per piece, as "
    "Google's original BERT code did."
)

MASKING_EXAMPLE = (
    "He sat on the bank of the river and watched the water. Later he went to the bank to "
    "deposit his unbelievably large paycheck."
)

LOSS_HELP = (
    "## The MLM loss, where it is computed\n"
    "The chosen model reads the corrupted input. At each selected position its logits go "
    "through a softmax over the whole vocabulary; the loss there is −log p(original token) "
    "in nats, and the training loss is the mean over the selected positions only (the "
    "positions not selected, 85 % of them at the default rate, cost nothing). Compare the "
    "policies: with 100 % [MASK] every predicted position shows the [MASK] token, which "
    "fine-tuning and use never show: the model learns to predict well only where it sees "
    "[MASK], and nothing asks it to build a useful vector for a real word at its own position "
    "(the train–test mismatch the 10 % random / 10 % kept soften: there the real, or a wrong, "
    "word stands where the answer is asked for); with everything kept the task is trivial "
    "copying and teaches nothing."
)

STATS_HELP = (
    "## Check the numbers\n"
    "Draw the policy many times over 1,000 built-in sentences (seeded) and compare the "
    "observed selection and replacement rates with the configured ones."
)
STATS_WAITING = "Press “Measure the rates” to draw the sentences and plot the rates (a longer job)."
