"""UI and teaching text of the "Fine-tuning & search" tab, kept apart from layout code."""

HEADS_HELP = (
    "## Pre-train once, fine-tune everywhere: task heads\n"
    "A pre-trained encoder turns text into vectors; a **task head** turns those vectors into an "
    "answer. For a sentence task the head is one linear layer on the pooled sentence vector "
    "([CLS] or mean): **C × d weights + C biases** (BERT-base, d = 768, two classes: 1,538 "
    "parameters, against the body's 110 million). For a token task (tagging) the same layer "
    "reads every word's first token and labels each word.\n\n"
    "**Frozen** (a *probe*): the encoder is not changed, only the head learns, on features "
    "computed once: seconds. **Unfrozen**: a copy of the encoder is fine-tuned with the head "
    "(small models only; the shared model is never changed): slower, usually better.\n\n"
    "Accuracy is measured on each task's **fixed held-out split** (never on the training "
    "sentences), next to the **majority baseline**: what always answering the most frequent "
    "training label scores. Set a small *training sentences* number (e.g. 12) to watch a head "
    "**overfit**: training accuracy climbs to 100 % while validation accuracy does not."
)

TASKS_HELP = (
    "Every label comes from where the text comes from, never from a model: the corpus source of "
    "a sentence (`scripts/build_corpus.py`), WordNet 3.0's lexicographer files, the text's own "
    "casing, named lists of people, places and elements (`scripts/build_entities.py`), or "
    "templates written and labelled for this project (`scripts/build_sentiment.py`). The data "
    "ships in `data/tasks/` (written by `scripts/build_tasks.py` and those two).\n\n"
    "**Entities** and **sentiment** are held out harder than by sentence: no validation name "
    "occurs in training, and no validation sentence's template either. After training, their "
    "held-out figure (entity F1 per label, or accuracy) is shown beside their baselines: a "
    "lookup of the names seen in training; always the majority label, and counting the "
    "templates' good and bad adjectives."
)

PROBE_HELP = (
    "### Where does the information live?\n"
    "The same frozen probe trained on each layer's features in turn (0 = the input embeddings, "
    "before any attention): the curve shows at which depth the task becomes linearly readable."
)

SEARCH_HELP = (
    "## Retrieval: an encoder as a search engine\n"
    "Every passage of the index (`data/passages.txt`: 18,445 corpus lines, the 3,191 sentences of "
    "the held-out split and the knowledge sources: country, city and element facts, the written "
    "facts, the elements' descriptions, WordNet's definitions) becomes one vector (mean or [CLS] pooling, normalised); "
    "the query becomes one too, and the closest vectors by cosine are the hits. **Exact** "
    "search compares the query with every vector (FAISS `IndexFlatIP`); **ANN** walks an HNSW "
    "graph (FAISS `IndexHNSWFlat`) and looks at a small part of them: much faster on millions "
    "of vectors, at the cost of sometimes missing a true neighbour. The first search of a model "
    "and pooling builds both indexes (a progress bar shows it) and caches them on disk."
)

REPORT_HELP = (
    "### How good is the approximate index, and does pooling matter?\n"
    "**Recall@k**: the share of the exact top-k that the ANN index also returns (200 queries "
    "from the training sample). **Dot product on unnormalised vectors**: how much of the cosine "
    "top-k it keeps (a dot product is the cosine times both lengths, so a longer vector can outrank "
    "a better-aligned shorter one). **[CLS] vs "
    "mean**: the Embeddings tab's paraphrase groups searched among the whole corpus: a hit when "
    "a sentence of the query's own group is in its top-k."
)

TOKEN_COLOURS = {"lower": "#e8eef9", "Capitalised": "#ffd98a", "O": "#eeeeee",
                 "B-PER": "#f4a3a3", "I-PER": "#f9cfcf", "B-LOC": "#9fd8a4", "I-LOC": "#cdeccf",
                 "B-ELEMENT": "#a9c8f2", "I-ELEMENT": "#d3e3f8"}

WHY_CLASS_HELP = (
    "### Which words drove this class?\n"
    "The Why-this-guess methods on the head you trained: gradient × input and integrated "
    "gradients (Captum) and leave-one-out, each token's score for p(predicted class), and a "
    "deletion check per method. Attributions say what the head's output is sensitive to on "
    "this sentence, not why the model learnt it; methods often disagree."
)
TRAIN_WAITING = "Press “Train the head” to see its training and validation curves (training stays behind its button)."
PROBE_WAITING = "Press “Probe every layer” to train one probe per layer (a longer job)."
