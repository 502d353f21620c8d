"""The Masking lab tab's text."""

MASKING_HELP = (
    "## How BERT is pre-trained: masked language modelling\n"
    "Each training sentence is corrupted: every token (never [CLS], [SEP] or padding) is "
    "*selected* with probability 15 %; a selected token is replaced by [MASK] 80 % of the "
    "time, by a random token 10 %, and kept unchanged 10 %. The model must recover the "
    "original token at every selected position, and only there. **Static** masking draws "
    "once and reuses the draw every epoch (original BERT); **dynamic** masking draws afresh "
    "each epoch (RoBERTa). **Whole-word** masking selects all pieces of a word together. "
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
    "in nats, and the training loss is the mean over the selected positions only (the other "
    "85 % cost nothing). Compare the policies: with 100 % [MASK] the model never sees real "
    "tokens at predicted positions, which it never meets in fine-tuning or use (the "
    "train–test mismatch the 10 % random / 10 % kept soften); with everything kept the task "
    "is trivial copying and teaches nothing."
)

STATS_HELP = (
    "## Check the numbers\n"
    "Draw the policy many times over 1,000 built-in sentences (seeded) and compare the "
    "observed selection and replacement rates with the configured ones."
)

NSP_HELP = (
    "## Next sentence prediction\n"
    "The original BERT was also trained to tell whether sentence B really follows sentence A "
    "(50 % of pairs) or is a random sentence. Only bert-base and bert-large ship that head "
    "(online models); the embedded models have none. RoBERTa dropped NSP: trained on longer "
    "contiguous text without it, it did as well or better, and later encoders followed."
)

NSP_A = "The weather was cold and grey all morning."

NSP_B = "By noon it had started to snow."
