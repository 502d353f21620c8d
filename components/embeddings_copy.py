"""UI and teaching text of the Embeddings tab, kept apart from layout code."""

EMBEDDINGS_HELP = (
    "## Sentence vectors: [CLS] pooling vs mean pooling\n"
    "An encoder gives one vector per token. To get **one vector per sentence** you *pool* them: "
    "take the first token's vector (**[CLS] pooling**), or average the vectors of the real "
    "tokens (**mean pooling**; padding is left out by the attention mask), or take each "
    "dimension's largest value (**max pooling**). Then compare two sentences by the **cosine** "
    "of their vectors.\n\n"
    "Type sentences one per line. **A blank line starts a new group** (sentences that should "
    "be close, e.g. paraphrases); a line `# topic` names the topic of the groups below it. "
    "The two heatmaps show the cosine of every pair, [CLS] on the left, mean on the right, on "
    "one colour scale; white lines mark the groups. The table scores how well each pooling "
    "separates same-group pairs from the others: the **gap** between the mean cosine within "
    "and across groups, and the **ROC AUC**, the chance that a random same-group pair scores "
    "above a random different-group pair (1 = perfect, 0.5 = chance). The AUC does not depend "
    "on the scale of the cosines, so it decides which pooling separates better."
)

WHY_HELP = (
    "### Why mean pooling often beats [CLS], why normalise, what Sentence-BERT changed\n"
    "- **[CLS] without fine-tuning is a poor sentence vector.** In pre-training, BERT's [CLS] "
    "vector only had to serve next-sentence prediction (and later encoders dropped even "
    "that), so nothing taught it to summarise meaning. The mean of all token vectors keeps "
    "information from every word, and is less dominated by a few directions the model uses "
    "everywhere: raw BERT vectors crowd into a narrow cone, so most cosines come out high. "
    "Reimers and Gurevych (2019) found the mean of raw BERT's outputs better than its [CLS] "
    "vector, and both worse than averaged GloVe word vectors, on semantic similarity.\n"
    "- **Normalise before the cosine.** Cosine is the dot product of unit vectors. Vector "
    "lengths can carry things such as word frequency or sentence length, not meaning; dividing by "
    "the length (L2 normalisation) leaves only the direction, and makes a dot product a "
    "cosine, which is how vector indexes compare millions of vectors fast.\n"
    "- **Sentence-BERT** fine-tuned BERT in a siamese set-up: the same encoder reads both "
    "sentences, its token vectors are mean-pooled, and the training objective (natural "
    "language inference, then, for later models, contrastive learning on about a billion "
    "sentence pairs) pulls paraphrases together and pushes others apart. Afterwards, cosine "
    "on the pooled vectors *means* similarity. **all-MiniLM-L6-v2** (`minilm-l6`, embedded in "
    "this app) is such a Sentence-BERT model, trained with mean pooling and normalised "
    "vectors: mean pooling is the vector it was trained to produce; its [CLS] vector was "
    "never trained on its own as the sentence vector (see how compressed its cosines are), "
    "though it passes through the same fine-tuned layers. Try the other models (`minilm-mlm`'s encoder was retrained here for "
    "fill-mask; `splade-tiny` was trained for sparse retrieval) and intermediate layers."
)

WORD_HELP = (
    "## How context moves a word\n"
    "The same word in different sentences: its vector at every layer (a word cut into "
    "several pieces is the mean of its pieces). Layer 0 is the **input embedding**: a table "
    "lookup plus the position, so the same word is almost the same vector wherever it "
    "stands. Each layer mixes in the context, so the occurrences drift apart: the “river "
    "bank” and the “bank account” end up further from each other than from their own "
    "sense. Every sentence must contain the word as a whole word (case does not matter); "
    "the first occurrence is used."
)

WORD_SCATTER_HELP = (
    "The scatter projects the occurrences' vectors at the chosen layer onto their first two "
    "principal components (PCA): points close together are occurrences the model reads alike."
)

SIMILARITY_DEFAULT_SET = "Paraphrases, same topic, unrelated"
