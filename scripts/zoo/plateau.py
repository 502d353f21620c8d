"""Why zoo families stay on the unigram plateau: one family, one named change, a short run.

    nice -n 19 python -m scripts.zoo plateau mini-bert base            # the shipped recipe
    nice -n 19 python -m scripts.zoo plateau mini-deberta absolute     # DeBERTa with BERT's positions

Trains one family of the mini zoo (``models.zoo``: the shipped shape, corpus, trainer and
scorer) with one named change (``VARIANTS``) for ``--tokens`` tokens and prints the held-out
curve: loss per masked piece and whole-word top-1 on the first ``--eval-sentences`` lines of
``data/heldout.txt`` (the zoo's own scorer; the word-frequency baseline on that protocol is
about 7.1 nats for the WordPiece families). Nothing is saved: these runs locate a cause, they
ship nothing. docs/zoo.md has what the runs found: the learnt absolute position tables wait
for attention by offset, which the locality start (``models/zoo/locality.py``) gives them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch
import torch.nn as nn

from models.pretraining.masking import MaskingPolicy
from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import train as Z

REPO = Path(__file__).resolve().parents[2]


def _position_tables(model: nn.Module):
    for name, module in model.named_modules():
        table = getattr(module, "position_embeddings", None)
        if name.endswith("embeddings") and isinstance(table, nn.Embedding):
            yield table


def no_positions(model: nn.Module) -> None:
    """Every learnt absolute position table zero and frozen (a position-blind encoder)."""
    for table in _position_tables(model):
        with torch.no_grad():
            table.weight.zero_()
        table.weight.requires_grad_(False)


def scale_positions(model: nn.Module, factor: float) -> None:
    for table in _position_tables(model):
        with torch.no_grad():
            table.weight.mul_(factor)


def mimetic_attention(model: nn.Module, std: float = 0.06) -> None:
    """W_k = W_q in every BERT-style attention (Trockman and Kolter's mimetic initialisation, its
    query-key half): q . k is then large for similar inputs, the token itself and, with a
    sinusoidal table, its neighbours."""
    for module in model.modules():
        query, key = getattr(module, "query", None), getattr(module, "key", None)
        if isinstance(query, nn.Linear) and isinstance(key, nn.Linear):
            with torch.no_grad():
                query.weight.normal_(0.0, std)
                key.weight.copy_(query.weight)


@torch.no_grad()
def local_heads(model: nn.Module, scale: float = 2.0, pairs: int = 8, shifts=(-1, 1)) -> None:
    """Heads 0 and 1 of every BERT-style layer start as previous- and next-token heads.

    With a sinusoidal table (``p_i`` = sin / cos of ``w_f i``), a rotation by ``s w_f`` in each
    (sin, cos) pair maps position ``j`` onto ``j - s``: ``W_q`` reads ``pairs`` of the highest
    frequencies and ``W_k`` the same pairs rotated, so ``q_i . k_j`` peaks at ``j = i + s``. Every
    weight is still learnt; only where the search starts changes.
    """
    import math

    table = next(_position_tables(model))
    for module in model.modules():
        query, key = getattr(module, "query", None), getattr(module, "key", None)
        if not (isinstance(query, nn.Linear) and isinstance(key, nn.Linear)):
            continue
        hidden, heads = query.in_features, module.num_attention_heads
        head = hidden // heads
        d = table.weight.shape[1]
        freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
        for h, s in enumerate(shifts):
            wq = torch.zeros(head, hidden, dtype=torch.float64)
            wk = torch.zeros(head, hidden, dtype=torch.float64)
            for n in range(min(pairs, head // 2)):
                c, sn = math.cos(s * float(freq[n])), math.sin(s * float(freq[n]))
                wq[2 * n, 2 * n], wq[2 * n + 1, 2 * n + 1] = 1.0, 1.0
                wk[2 * n, 2 * n], wk[2 * n, 2 * n + 1] = c, -sn
                wk[2 * n + 1, 2 * n + 1], wk[2 * n + 1, 2 * n] = c, sn
            rows = slice(h * head, (h + 1) * head)
            query.weight[rows] = (wq * math.sqrt(scale)).float()
            key.weight[rows] = (wk * math.sqrt(scale)).float()
            query.bias[rows] = 0.0
            key.bias[rows] = 0.0


def rebuilt_albert(change: dict, identity_mapping: bool = False):
    """ALBERT rebuilt with a config change, then the locality start (diagnostics only);
    ``identity_mapping``: the embedding-to-hidden mapping starts as the identity (BERT's path:
    the embedding LayerNorm's output reaches the first layer unchanged; needs 128-wide embeddings)."""
    def build(models: dict) -> dict:
        import transformers as T
        from transformers import AutoTokenizer

        from models.zoo.locality import locality_start_

        config = models["model"].config
        for k, v in change.items():
            setattr(config, k, v)
        torch.manual_seed(0)
        rebuilt = {"model": T.AlbertForPreTraining(config)}
        if identity_mapping:  # (hidden, embedding): the identity, stacked when the embedding is narrower
            mapping = rebuilt["model"].albert.encoder.embedding_hidden_mapping_in
            out_f, in_f = mapping.weight.shape
            with torch.no_grad():
                mapping.weight.copy_(torch.eye(in_f).repeat(out_f // in_f, 1))
                mapping.bias.zero_()
        # the mapping as chosen above (random or identity), not the locality start's own
        locality_start_(rebuilt, AutoTokenizer.from_pretrained(str(REPO / "weights" / "zoo" / "mini-albert")),
                        projections=False)
        return rebuilt
    return build


def unit_projection(models: dict) -> dict:
    """The embedding-to-hidden projection (ALBERT's mapping, ELECTRA's embeddings_project)
    restarted norm-preserving (instead of N(0, 0.02): outputs of std 0.16), with the locality
    start. The locality start restarts the projection itself, so this is the locality start on
    the randomly built models (kept as a variant of its own, so that its runs can be repeated by name)."""
    from transformers import AutoTokenizer

    from models.zoo.locality import locality_start_

    family = "mini-albert" if hasattr(models["model"], "albert") else "mini-electra"
    locality_start_(models, AutoTokenizer.from_pretrained(str(REPO / "weights" / "zoo" / family)))
    return models


def own_generator_embeddings(models: dict) -> dict:
    """ELECTRA's generator with embeddings of its own (a copy of the shared ones at the start),
    so the discriminator's 50 x RTD gradient does not reach the generator's input (a diagnostic:
    sharing them is ELECTRA's recipe)."""
    import copy

    gen = models["generator"]
    gen.electra.embeddings = copy.deepcopy(models["model"].electra.embeddings)
    gen.generator_lm_head.weight = gen.electra.embeddings.word_embeddings.weight
    return models


def absolute_deberta(models: dict) -> dict:
    """DeBERTa-v2 in the zoo's shape without relative attention, with an absolute position
    table added at the input as BERT does (transformers' own options)."""
    import transformers as T

    config = models["model"].config
    config.relative_attention, config.position_biased_input, config.pos_att_type = False, True, []
    return {"model": T.DebertaV2ForMaskedLM(config)}


# name -> (what it changes, function(models) -> models); masking "rate" is applied by run()
VARIANTS = {
    "base": ("the shipped recipe", lambda models: models),
    "nope": ("no position table (zero, frozen)", lambda models: (no_positions(models["model"]), models)[1]),
    "sinusoidal": ("the table starts as sinusoids", lambda models: (zm.sinusoidal_positions_(models["model"]), models)[1]),
    "sinusoidal-mimetic": ("sinusoids and W_k = W_q",
                           lambda models: (zm.sinusoidal_positions_(models["model"]),
                                           mimetic_attention(models["model"]), models)[2]),
    "sinusoidal-x4": ("sinusoids at 4x the token embeddings' scale",
                      lambda models: (zm.sinusoidal_positions_(models["model"]),
                                      scale_positions(models["model"], 4.0), models)[2]),
    "sinusoidal-local": ("sinusoids at 2x the token embeddings' scale; heads 0 and 1 start as previous/next-token heads",
                         lambda models: (zm.sinusoidal_positions_(models["model"]),
                                         scale_positions(models["model"], 2.0),
                                         local_heads(models["model"]), models)[3]),
    "local-start": ("the zoo's locality start (models/zoo/locality.py): sinusoids at 2x, heads 0/1 fitted as previous/next-token heads",
                    None),
    "local-start-fast": ("the locality start reading only pairs of at least 0.3 radians per position", None),
    "local-start-sharp": ("the locality start at twice the sharpness", None),
    "local-start-fast-sharp": ("the locality start reading only pairs of at least 0.35 radians per position, "
                               "the same peak score", None),
    "local-start-one": ("the locality start with one head (previous token) per layer", None),
    "local-unshared": ("ALBERT, locality start, each layer its own weights (not ALBERT's idea: a diagnostic)",
                       rebuilt_albert({"num_hidden_groups": 4})),
    "local-bert-embedding-path": ("ALBERT, locality start, 128-wide embeddings and the mapping starting as the "
                                  "identity (a diagnostic)", rebuilt_albert({"embedding_size": 128}, identity_mapping=True)),
    "local-stacked-identity": ("ALBERT, locality start, 64-wide embeddings, the "
                               "mapping starting as the identity stacked twice (a diagnostic)",
                               rebuilt_albert({"embedding_size": 64}, identity_mapping=True)),
    "local-wide-embedding": ("ALBERT, locality start, 128-wide embeddings (no factorisation: a diagnostic)",
                             rebuilt_albert({"embedding_size": 128})),
    "local-unit-projection": ("the locality start, the embedding projection starting norm-preserving "
                              "(orthonormal, scaled) instead of N(0, 0.02)", unit_projection),
    "local-start-own-embeddings": ("ELECTRA, the locality start, the generator's embeddings not shared "
                                   "(a diagnostic)", own_generator_embeddings),
    "local-start-no-pair": ("the locality start, trained on the MLM loss alone: no NSP / SOP (a diagnostic)", None),
    "sinusoidal-x2": ("sinusoids at 2x the token embeddings' scale",
                      lambda models: (zm.sinusoidal_positions_(models["model"]),
                                      scale_positions(models["model"], 2.0), models)[2]),
    "absolute": ("DeBERTa with BERT's absolute positions, no relative attention", absolute_deberta),
    "mask40": ("40 % of tokens selected instead of 15 %", lambda models: models),
}
MASK_RATE = {"mask40": 0.40}
MLM_ONLY = {"local-start-no-pair"}  # trained on the MLM loss alone (no NSP / SOP in the gradient)
# variants of the locality start: its module's constants for the build
LOCAL_SETTINGS = {"local-start-fast": {"MIN_FREQUENCY": 0.3}, "local-start-sharp": {"SHARPNESS": 2.0},
                  "local-start-fast-sharp": {"MIN_FREQUENCY": 0.35},
                  "local-start-one": {"SHIFTS": (-1,)}}


def build(family: str, variant: str, tokenizer, shape: zm.Shape, dropout: float | None, seed: int = 0,
          position_scale: float = 0.0) -> dict:
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if variant == "absolute" and family != "mini-deberta":
        raise SystemExit("the 'absolute' variant is DeBERTa's (mini-deberta)")
    torch.manual_seed(seed)
    from models.zoo import locality

    settings = {**LOCAL_SETTINGS.get(variant, {}), **({"POSITION_SCALE": position_scale} if position_scale else {})}
    saved = {k: getattr(locality, k) for k in settings}
    for k, v in settings.items():  # for the variant's own locality start too
        setattr(locality, k, v)
    try:
        models = zm.build_models(family, tokenizer, shape, dropout=dropout,
                                 position_init="local" if variant.startswith("local-start") else "random")
        torch.manual_seed(seed)
        return models if VARIANTS[variant][1] is None else VARIANTS[variant][1](models)
    finally:
        for k, v in saved.items():
            setattr(locality, k, v)


def train_variant(family: str, variant: str, *, tokens: int, batch_size: int, lr: float, dropout: float | None,
        layers: int, max_len: int, evals: int, eval_sentences: int, corpus: Path, max_sentences: int = 0,
        shape: zm.Shape | None = None, log=print, seed: int = 0, generator_hidden: int = 0,
        tokenizer_of: str = "", embedding: int = 0, position_scale: float = 0.0) -> list[dict]:
    """Train and return the held-out curve (one dict per evaluation)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(REPO / "weights" / "zoo" / (tokenizer_of or family)))
    chunks = zd.corpus_chunks(corpus, tokenizer, max_len, max_sentences)
    heldout = [s for s in (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines() if s]
    widths = {"albert_embedding": embedding, "electra_embedding": embedding} if embedding else {}
    model_shape = shape or zm.Shape(layers=layers, **({"electra_generator_hidden": generator_hidden}
                                                      if generator_hidden else {}), **widths)  # tables of 128 rows
    train_shape = zm.Shape(**{**model_shape.__dict__, "max_len": max_len})  # sequences of max_len
    cfg = Z.ZooConfig(tokens=tokens, batch_size=batch_size, lr=lr, evals=evals, eval_sentences=eval_sentences,
                      dropout=dropout, shape=train_shape, seed=seed)
    models = build(family, variant, tokenizer, model_shape, dropout, seed=seed, position_scale=position_scale)
    curve = []

    def keep(line: str) -> None:
        row = json.loads(line)
        if "eval" in row:
            point = {k: v for k, v in row["eval"].items() if not isinstance(v, (list, dict))}
            curve.append(point)
            log(json.dumps(point))

    if variant in MLM_ONLY:  # the pair objective's loss left out of the gradient (it is still computed)
        forward = zm.Objective.forward

        def mlm_only(self, *a, **k):
            loss, parts = forward(self, *a, **k)
            return parts["mlm"], parts

        zm.Objective.forward = mlm_only
    policy = MaskingPolicy(rate=MASK_RATE[variant]) if variant in MASK_RATE else None
    original = Z.masking_policy
    if policy is not None:
        Z.masking_policy = lambda fam: policy
    try:
        Z.train_family(family, tokenizer, chunks, heldout, cfg, models=models, log=keep)
    finally:
        Z.masking_policy = original
        if variant in MLM_ONLY:
            zm.Objective.forward = forward
    return curve


def add_arguments(p) -> None:
    p.add_argument("family", choices=zm.FAMILIES)
    p.add_argument("variant", choices=list(VARIANTS))
    p.add_argument("--tokens", type=int, default=1_500_000)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--dropout", type=float, default=None)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--max-len", type=int, default=128, help="tokens per training sequence")
    p.add_argument("--evals", type=int, default=5)
    p.add_argument("--eval-sentences", type=int, default=300)
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus" / "train_ordered.tsv")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="the model's initialisation and the data order")
    p.add_argument("--generator-hidden", type=int, default=0, help="ELECTRA's generator width (0: the zoo's)")
    p.add_argument("--embedding", type=int, default=0,
                   help="ALBERT's and ELECTRA's factorised embedding width (0: the zoo's 64; 128: none)")
    p.add_argument("--position-scale", type=float, default=0.0,
                   help="the locality start's table scale, in token-embedding stds (0: locality.POSITION_SCALE)")
    p.add_argument("--tokenizer-of", default="", choices=("",) + zm.FAMILIES,
                   help="train with another family's tokenizer (a diagnostic; default: the family's own)")


def run(args) -> int:
    torch.set_num_threads(args.threads)
    print(f"{args.family} {args.variant}: {VARIANTS[args.variant][0]}", flush=True)
    start = time.time()
    curve = train_variant(args.family, args.variant, tokens=args.tokens, batch_size=args.batch_size, lr=args.lr,
                          dropout=args.dropout, layers=args.layers, max_len=args.max_len, evals=args.evals,
                          eval_sentences=args.eval_sentences, corpus=args.corpus, seed=args.seed,
                          generator_hidden=args.generator_hidden, tokenizer_of=args.tokenizer_of,
                          embedding=args.embedding, position_scale=args.position_scale)
    last = curve[-1] if curve else {}
    print(f"end: loss per piece {last.get('piece_loss', float('nan')):.3f}, whole-word top-1 "
          f"{last.get('word_top1', float('nan')):.3f}, {time.time() - start:.0f} s", flush=True)
    return 0

