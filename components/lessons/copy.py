"""UI text of the Lessons tab: the steps of the story the app teaches, in order.

Each step: a few sentences, one thing to try in its live view, and a question with its
answer (revealed on demand). Plain data, no Gradio: ``components.shell.links`` reads the slugs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    slug: str  # in links: ?lesson=<slug> (or the step's number)
    title: str
    text: str  # Markdown
    try_this: str
    question: str
    answer: str


TAB_LABEL = "Lessons"
INTRO = (
    "## Lessons: how an encoder works, in nine steps\n"
    "Each step explains one idea and opens a live view already computed on an example. Edit "
    "its inputs and press its button to recompute; then answer the check-yourself question "
    "before you reveal the answer. Go in order with **Previous / Next**, or jump with the "
    "step list. Every view also has a full tab of its own."
)
REVEAL = "Reveal the answer"
WAITING = (
    "This step needs a model that is not available on this machine: {what}. The step "
    "opens when one is (the mini zoo trained into `weights/zoo/`, or a Hub model cached)."
)

STEPS = (
    Step(
        "encoder-vs-decoder",
        "Encoder vs decoder: both sides or left only",
        "A **decoder** (GPT) reads left to right: each position sees only the words before it, "
        "so it can predict the next word. An **encoder** (BERT) reads the whole text at once: "
        "each position sees both sides. That is why an encoder is trained to fill in blanks, "
        "not to continue text. Below, the same encoder fills the same blank twice: once as "
        "trained (both sides), once with a causal mask added, so that it sees only the left. "
        "The model was never trained with that mask, so the second answer mixes lost context "
        "with an unfamiliar way of reading.",
        "Move the [MASK] to the start of the sentence: with left context only, what is left "
        "for the model to go on?",
        "Why does the causal reading do worst when the mask is near the start of the text?",
        "With a causal mask a position sees only itself and the tokens to its left. Near the "
        "start there are almost none, so the words that decide the answer (after the mask) are "
        "invisible; the bidirectional reading sees them.",
    ),
    Step(
        "tokens-embeddings",
        "Tokens and the input embeddings",
        "The tokenizer cuts text into pieces from a fixed vocabulary (rare words become several "
        "pieces) and adds special tokens such as [CLS] and [SEP]. Each piece becomes a vector: "
        "its **token embedding**, plus a **position embedding** for where it stands, plus a "
        "**segment embedding** for which sentence of a pair it belongs to. The sum (then a "
        "LayerNorm) is all the first layer receives. The check below recomputes the sum and "
        "compares it with what the model's own embedding layer produced.",
        "Give a second sentence: the segment rows change from A to B after the first [SEP].",
        "Two identical words at different places in a sentence: do they enter the first layer "
        "as the same vector?",
        "No. Their token embeddings are equal, but their position embeddings differ, so the "
        "sums differ. (Models with rotary positions, such as ModernBERT, add position inside "
        "attention instead, and have no position row here.)",
    ),
    Step(
        "attention",
        "Attention: where each token looks",
        "In every layer, each head lets every token take a weighted average of the others' "
        "vectors; the weights (one row per token, summing to 1) come from comparing a query "
        "with every key. The heatmap shows one head's weights: row = the token looking, column "
        "= the token looked at. Many heads look at [CLS], [SEP] or the next token; a few follow "
        "meaning. Attention weights show where information can flow, not why the model decides "
        "what it decides.",
        "Change the layer and head: find a head that puts most weight on the previous or the "
        "next token.",
        "What does each row of the heatmap add up to, and why?",
        "Each row sums to 1: the weights are a softmax over the positions the token may look "
        "at (all of them, for an encoder).",
    ),
    Step(
        "masking",
        "Masking: 15 %, and 80 / 10 / 10",
        "BERT learns by fixing corrupted text. In each sentence it **selects 15 %** of the "
        "tokens (never the special ones). Of those, **80 %** become [MASK], **10 %** a random "
        "token, and **10 %** stay as they were; the model must give the original token at every "
        "selected position. The random and kept ones stop it from learning that only [MASK] "
        "needs predicting, since [MASK] never appears when the model is used. With dynamic "
        "masking (RoBERTa) each epoch draws a fresh selection.",
        "Change the seed to draw again, or raise the rate: at 0.5, how much of the sentence is "
        "left to read?",
        "A selected token that was kept unchanged: does it still count in the loss?",
        "Yes. Every selected position is scored, whatever the model saw there; unselected "
        "positions cost nothing.",
    ),
    Step(
        "mlm-loss",
        "The MLM loss",
        "At each selected position the model gives a score (logit) to every token of its "
        "vocabulary; a softmax turns them into probabilities. The loss there is −log p(original "
        "token): 0 when the model is sure and right, large when it gave the right token little "
        "probability. The MLM loss is the mean over the selected positions only. The table "
        "shows each selected position; below it, the arithmetic for one of them, step by step.",
        "Change the seed so that other tokens are selected: which kind of word costs the most?",
        "The model gives the right token probability 0.5. What is the loss at that position, "
        "in nats?",
        "−ln 0.5 ≈ 0.693 nats. (p = 1 gives 0; p = 0.01 gives about 4.6.)",
    ),
    Step(
        "nsp",
        "Next-sentence prediction, and why RoBERTa dropped it",
        "BERT had a second task: given sentences A and B, tell whether B really followed A or "
        "was a random sentence (50 % each), read from the [CLS] vector. RoBERTa's authors "
        "tested it by ablation: trained on runs of contiguous full sentences without the NSP "
        "loss, their model matched or slightly beat the versions trained with it on downstream "
        "tasks (and pairs of single sentences hurt), so they dropped it. ALBERT's authors gave "
        "a reason why it teaches little: a random B is usually on another topic, so the task "
        "can be solved by topic alone. ALBERT kept a pair task but made it harder: **sentence "
        "order** (both sentences are real neighbours; are they swapped?). The model here is the "
        "first one available with either head.",
        "Write a B on the same topic that does not follow A: is the head fooled?",
        "Why is telling a random sentence from the next one easier than telling the order of "
        "two neighbours?",
        "A random sentence usually differs in topic, which is easy to spot; two neighbours "
        "share the topic, so only order cues (reference, tense, discourse) are left.",
    ),
    Step(
        "variants",
        "The variants: one family's idea at a time",
        "RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa and ModernBERT change one or a few of "
        "BERT's choices: the masking, the training task, sharing weights, the attention or the "
        "positions. This project trained a miniature of each on the same corpus, with the same "
        "shape and the same number of training tokens, so the differences come from the ideas "
        "and not from the budget. These are small models trained here on a CPU, not the "
        "published checkpoints; their scores compare ideas at this size only. Below: their "
        "learning curves, scores, and one masked sentence through each.",
        "Write your own masked sentence: which miniatures agree?",
        "ELECTRA's discriminator is trained on every token, BERT only on the 15 % it masked. "
        "Why does that help with a fixed budget?",
        "Every token gives a training signal (original or replaced?), so each sentence teaches "
        "more per step than a loss on 15 % of the positions.",
    ),
    Step(
        "pooling-retrieval",
        "[CLS] vs mean pooling, and retrieval",
        "To compare whole sentences, an encoder's token vectors are pooled into one vector: "
        "the [CLS] token's, or the mean over the tokens. The heatmaps show the cosine between "
        "every pair of sentences for both poolings; sentences of one group should be close. "
        "Which pooling works depends on how the model was trained: this one (a "
        "sentence-transformers model) was trained on mean-pooled vectors. Search uses the same "
        "vectors: the query's nearest corpus sentences, found with a FAISS index.",
        "Search with [CLS] pooling instead of mean: do the hits still match the query?",
        "Why can [CLS] pooling work badly on a model trained only with masked-language "
        "modelling?",
        "Nothing in MLM training asks the [CLS] vector to summarise the sentence (only NSP "
        "used it), so it need not place similar sentences close together.",
    ),
    Step(
        "fine-tuning",
        "Fine-tuning heads: pre-train once, reuse everywhere",
        "A task head is one linear layer on top of the encoder: C × d weights + C biases, tiny "
        "next to the body. With the encoder frozen it is a **probe** (seconds to train): how "
        "much of the task the pre-trained vectors already hold. Fine-tuning trains the body "
        "too. Here a probe learns to tell fiction from State of the Union addresses, labels "
        "taken from where each sentence comes from (`data/tasks/`); the curves show training "
        "and held-out accuracy.",
        "Classify a sentence of your own: a speech, or a line from a novel.",
        "The probe reaches high held-out accuracy with the encoder frozen. What does that tell "
        "you about the encoder's vectors?",
        "That the information separating the classes is already there, readable by a linear "
        "layer: pre-training learned it without these labels.",
    ),
)

ENCODER_DECODER_TEXT = "The [MASK] barked at the postman all night."
EMBEDDINGS_TEXT = "The bank by the river."
ATTENTION_TEXT = "The animal didn't cross the street because it was too tired."
MASKING_TEXT = ("The river bank was flooded after the storm, so the walkers took the long road "
                "around the hill to the village.")
NSP_A = "The weather was cold and grey all morning."
NSP_B = "By noon it had started to snow."
VARIANTS_TEXT = "The capital of France is [MASK]."
POOLING_SENTENCES = (
    "A cat is sleeping on the sofa.\nA kitten naps on the couch.\n\n"
    "The stock market fell sharply today.\nShares dropped steeply this afternoon.\n\n"
    "He is playing the guitar on stage.\nA musician performs a song for the crowd."
)
SEARCH_QUERY = "The whale dived under the ship."
HEAD_TASK = "fiction-speech"
HEAD_SENTENCE = "The President asked Congress to pass the budget before the end of the year."
