"""Teaching text of the retrieve-then-read section (and its lesson step's view)."""

READING_QUESTION = "What city is the capital of Peru?"
READING_WAITING = "Press the button above: the chain runs on this machine and each part is timed."
DECODER_MISSING = ("The zoo's decoder ({decoder}) is not trained on this machine, so no generated answer is "
                   "timed beside the chain: `python -m scripts.zoo train --families {decoder}` trains it.")

READING_HELP = (
    "### Retrieve, then read\n"
    "An encoder is the cheap, checkable half of question answering over a text collection. A "
    "**bi-encoder** (all-MiniLM-L6-v2, mean pooling) embeds the question and finds the k nearest "
    "passages in an exact FAISS index of 18,445 corpus lines: the held-out split and the corpus's "
    "knowledge sources (country, city and element facts written from records, the written facts, "
    "the elements' descriptions, WordNet's definitions as sentences). A **span reader** then reads "
    "`[CLS] question [SEP] passage [SEP]` for each passage and points at the answer: the shipped "
    "reader is a start/end head of 770 parameters over the same encoder, kept frozen, trained on "
    "templated questions (`scripts/train_reader.py`, card in `weights/span-reader/`). Its scores "
    "share one softmax over all k passages, so passages compete. Every answer is a span of a corpus "
    "line you can read; a decoder writing an answer gives no such pointer, and pays a forward pass "
    "per piece it writes. The chart times each part of this one query on this machine, now."
)
