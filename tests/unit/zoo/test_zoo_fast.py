"""The zoo trainer's fast CPU path (models/zoo/fast.py, ZooConfig.fast_kernels / workers).

References: autograd of ``nn.Linear`` for the oneDNN op; torch's SDPA (transformers' own
attention function) and the stock model for the explicit attention; the stock trainer
(``fast_kernels=False``) for the split batches; the binomial law for the dropout masks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from models.zoo import fast

REPO = Path(__file__).resolve().parents[3]


def test_dropout_mask_keeps_one_minus_p_scaled_and_follows_its_generator():
    p = 0.1
    x = torch.ones(400, 1000)
    with fast.dropout_generator(torch.Generator().manual_seed(5)):
        mask = fast.dropout_mask(x, p)
    with fast.dropout_generator(torch.Generator().manual_seed(5)):
        again = fast.dropout_mask(x, p)
    assert torch.equal(mask, again)  # the thread's generator decides the draws
    values = mask.unique()
    assert values.tolist()[0] == 0.0 and len(values) == 2
    assert float(values[1]) == pytest.approx(1 / (1 - p), rel=1e-7)
    kept = float((mask > 0).float().mean())
    sd = (p * (1 - p) / mask.numel()) ** 0.5
    assert abs(kept - (1 - p)) < 5 * sd  # a binomial draw of 400,000 at 1 - p
    # the two 32-bit halves of each draw are both used, and neither is biased
    assert abs(float((mask[:, 0::2] > 0).float().mean()) - (1 - p)) < 7 * sd
    assert abs(float((mask[:, 1::2] > 0).float().mean()) - (1 - p)) < 7 * sd
    assert torch.equal(fast.fast_dropout(x, p, training=False), x) and torch.equal(fast.fast_dropout(x, 0.0), x)


def _tiny_model(kind: str, dropout: float):
    import transformers as T

    torch.manual_seed(0)
    if kind == "bert":
        return T.BertModel(T.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=64, hidden_dropout_prob=dropout,
                                        attention_probs_dropout_prob=dropout))
    # ModernBERT: a local layer's window (4 tokens) shorter than the text, so its band mask matters
    return T.ModernBertModel(T.ModernBertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                                num_attention_heads=4, intermediate_size=64, local_attention=4,
                                                global_attn_every_n_layers=2, attention_dropout=dropout,
                                                mlp_dropout=dropout, embedding_dropout=dropout, pad_token_id=0,
                                                reference_compile=False))


@pytest.mark.parametrize("kind", ["bert", "modernbert"])
def test_fast_attention_with_dropout_is_sdpa_when_nothing_is_dropped(kind, monkeypatch):
    """Training mode, dropout 0.3, every mask forced to keep (scaled): the fast path's
    explicit attention and dropout must give the stock model's eval output and gradients."""
    ids = torch.randint(5, 100, (3, 11))
    attention = torch.ones_like(ids)
    attention[1, 7:] = 0  # padding: the mask reaches the attention
    model = _tiny_model(kind, 0.3)
    model.eval()
    ref = model(input_ids=ids, attention_mask=attention).last_hidden_state
    ref_grads = torch.autograd.grad(ref[attention.bool()].square().sum(), list(model.parameters()), allow_unused=True)

    monkeypatch.setattr(fast, "dropout_mask", lambda x, p: torch.ones_like(x))  # keep all, scale 1
    model.train()
    with fast.fast_kernels(model):
        assert model.config._attn_implementation == fast.ATTENTION
        out = model(input_ids=ids, attention_mask=attention).last_hidden_state
        grads = torch.autograd.grad(out[attention.bool()].square().sum(), list(model.parameters()), allow_unused=True)
    assert model.config._attn_implementation == "sdpa"  # restored
    torch.testing.assert_close(out[attention.bool()], ref[attention.bool()], rtol=1e-5, atol=1e-5)
    assert sum(g is not None for g in grads) >= len(grads) - 2  # every weight but BERT's pooler
    scale = max(float(r.abs().max()) for r in ref_grads if r is not None)
    for g, r in zip(grads, ref_grads):
        assert (g is None) == (r is None)
        if g is not None:  # float32 summation order: to 1e-5 of the largest gradient
            torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5 * scale)


def _tiny_run(family: str, tmp_path, max_steps: int, dropout: float, **kw):
    from transformers import AutoTokenizer

    from models.registry.zoo_entries import zoo_folder
    from models.zoo import data as zd
    from models.zoo import train as Z
    from models.zoo.families import Shape

    tok = AutoTokenizer.from_pretrained(zoo_folder(family))
    lines = [s for s in open(REPO / "data" / "train_sample.txt", encoding="utf-8").read().splitlines() if s][:120]
    chunks = zd.make_chunks(["s"] * len(lines), tok(lines, add_special_tokens=False)["input_ids"], 61)
    shape = Shape(layers=2, hidden=32, heads=2, ffn=64, vocab=len(tok), max_len=64, albert_embedding=16,
                  electra_embedding=16, electra_generator_hidden=16)
    teacher = None
    if family == "mini-distilbert":
        import transformers as T

        torch.manual_seed(3)
        teacher = T.BertForPreTraining(T.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=64,
                                                    max_position_embeddings=64))
    # a small budget, so the learning rate is well above 0 by the steps compared
    cfg = Z.ZooConfig(tokens=4000, batch_size=8, evals=0, dropout=dropout, shape=shape, **kw)
    return Z.train_family(family, tok, chunks, [], cfg, teacher=teacher, log=lambda _: None,
                          max_steps=max_steps)


@pytest.mark.parametrize("family", ["mini-bert", "mini-distilbert", "mini-modernbert", "mini-deberta"])
def test_split_batches_train_the_same_weights_as_the_stock_path(family, tmp_path):
    """Dropout 0 (the maths then has no randomness but the data's): 6 steps with the batch
    split over 2 worker threads end at the stock path's weights, to float tolerance.
    (Not ALBERT: its SOP head keeps transformers' classifier dropout of 0.1 whatever
    ``ZooConfig.dropout`` says; not ELECTRA: each part samples its replacements from its own
    generator, the same distribution but other draws.)"""
    torch.set_num_threads(2)
    stock = _tiny_run(family, tmp_path, 6, 0.0, fast_kernels=False)
    split = _tiny_run(family, tmp_path, 6, 0.0, workers=2)
    assert split["record"]["tokens"] == stock["record"]["tokens"]
    ref = stock["objective"].state_dict()
    for name, value in split["objective"].state_dict().items():
        if value.is_floating_point():
            torch.testing.assert_close(value, ref[name], rtol=1e-4, atol=2e-6)
    start = _tiny_run(family, tmp_path, 1, 0.0, fast_kernels=False)["objective"].state_dict()
    moved = max(float((ref[k] - start[k]).abs().max()) for k in ref if ref[k].is_floating_point())
    assert moved > 1e-3  # the weights did move between step 1 and step 6: the comparison means something


def test_split_batch_shares_sum_to_one_and_parts_are_cut_to_their_longest_row():
    from models.zoo.step import split_batch

    ids = torch.arange(6 * 9).view(6, 9)
    attention = torch.ones(6, 9, dtype=torch.long)
    attention[:3, 5:] = 0  # the first half's rows are at most 5 long
    labels = torch.full((6, 9), -100)
    labels[0, 1] = labels[4, 2] = labels[5, 3] = 7
    pair = torch.tensor([0, 1, 0, 1, 1, 0])
    parts = split_batch((ids, attention, torch.zeros_like(ids), ids, labels, pair), 2)
    assert [p[0][0].shape for p in parts] == [(3, 5), (3, 9)]
    assert torch.equal(parts[1][0][5], pair[3:])
    for key, expected in (("masked", [1 / 3, 2 / 3]), ("rows", [0.5, 0.5]), ("real", [15 / 42, 27 / 42])):
        assert [p[1][key] for p in parts] == pytest.approx(expected)
    labels[:3] = -100  # a part without a masked position: no split
    assert split_batch((ids, attention, torch.zeros_like(ids), ids, labels, pair), 2) is None


@pytest.mark.parametrize("kind", ["bert", "modernbert"])
def test_fast_attention_under_bf16_autocast_is_sdpa_to_bfloat16_precision(kind, monkeypatch):
    """Under bf16 autocast the fast path's attention runs as explicit products in bfloat16
    (the scores, mask and softmax in float32): its output and gradients are the stock
    float32 model's (SDPA) to bfloat16's precision, and it did take that path."""
    ids = torch.randint(5, 100, (3, 11))
    attention = torch.ones_like(ids)
    attention[1, 7:] = 0
    model = _tiny_model(kind, 0.0)
    model.train()
    ref = model(input_ids=ids, attention_mask=attention).last_hidden_state
    ref_grads = torch.autograd.grad(ref[attention.bool()].square().sum(), list(model.parameters()), allow_unused=True)
    calls = []
    explicit = fast._explicit_attention

    def spy(*args, **kwargs):
        calls.append(kwargs.get("probs_dtype"))
        return explicit(*args, **kwargs)

    monkeypatch.setattr(fast, "_explicit_attention", spy)
    rotary, fused = [], fast._RotaryQKV

    class Rotary(fused):  # ModernBERT's rotary positions: the fused function, not transformers'
        @staticmethod
        def forward(ctx, *args):
            rotary.append(args[0].dtype)
            return fused.forward(ctx, *args)

    monkeypatch.setattr(fast, "_RotaryQKV", Rotary)
    with fast.fast_kernels(model), torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(input_ids=ids, attention_mask=attention).last_hidden_state
        grads = torch.autograd.grad(out[attention.bool()].float().square().sum(), list(model.parameters()),
                                    allow_unused=True)
    assert calls == [torch.bfloat16] * 2  # each layer's attention, in bfloat16
    assert rotary == ([torch.bfloat16] * 2 if kind == "modernbert" else [])
    real = attention.bool()
    err = float((out[real].float() - ref[real]).abs().max())
    assert 0 < err < 0.05 * float(ref[real].abs().max())  # bfloat16 keeps 8 bits: not float32, close to it
    pairs = [(g, r) for g, r in zip(grads, ref_grads) if r is not None]
    largest = max(float(r.norm()) for _, r in pairs)
    for g, r in pairs:  # each weight's gradient, to 5 % of itself or 1 % of the largest
        assert float((g - r).norm()) < 0.05 * float(r.norm()) + 0.01 * largest


def test_split_workers_train_under_bf16_autocast(tmp_path):
    """bf16 autocast reaches the worker threads (autocast's state is per thread): 6 split
    steps in bf16 end near the float32 split run's weights, but not on them."""
    torch.set_num_threads(2)
    fp32 = _tiny_run("mini-bert", tmp_path, 6, 0.0, workers=2)["objective"].state_dict()
    bf16 = _tiny_run("mini-bert", tmp_path, 6, 0.0, workers=2, autocast="bf16")["objective"].state_dict()
    start = _tiny_run("mini-bert", tmp_path, 1, 0.0, fast_kernels=False)["objective"].state_dict()
    keys = [k for k in fp32 if fp32[k].is_floating_point()]
    assert all(bf16[k].dtype == torch.float32 for k in keys)  # float32 weights and optimiser
    apart = sum(float((bf16[k] - fp32[k]).square().sum()) for k in keys) ** 0.5
    moved = sum(float((fp32[k] - start[k]).square().sum()) for k in keys) ** 0.5
    assert 0 < apart < 0.2 * moved


def test_albert_gelu_new_runs_as_the_fused_tanh_gelu_with_the_same_outputs_and_gradients():
    """ALBERT's ``gelu_new`` (transformers' five elementwise operations) runs as torch's fused
    ``gelu(approximate="tanh")`` within ``fast_kernels``: the stock model's output and
    gradients to float32 rounding, and the stock activation back after the block."""
    import transformers as T
    from transformers.activations import NewGELUActivation

    torch.manual_seed(0)
    model = T.AlbertModel(T.AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=4, intermediate_size=64, hidden_act="gelu_new"))
    model.train()
    ids = torch.randint(5, 100, (3, 11))
    ref = model(input_ids=ids).last_hidden_state
    ref_grads = torch.autograd.grad(ref.square().sum(), list(model.parameters()), allow_unused=True)
    acts = [m for m in model.modules() if type(m) is NewGELUActivation]
    assert acts
    with fast.fast_kernels(model):
        assert all(m.forward is fast._gelu_tanh for m in acts)
        out = model(input_ids=ids).last_hidden_state
        grads = torch.autograd.grad(out.square().sum(), list(model.parameters()), allow_unused=True)
    assert all("forward" not in vars(m) for m in acts)  # the class's forward again
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    for g, r in zip(grads, ref_grads):
        assert (g is None) == (r is None)
        if g is not None:
            torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)


def _rope(T: int, d: int, seed: int, symmetric: bool):
    """cos and sin (1, T, d) as ModernBERT's rotary embedding makes them (the two halves the
    same angles), or with unrelated halves, so that a mix-up of halves shows."""
    g = torch.Generator().manual_seed(seed)
    angles = torch.arange(T, dtype=torch.float32)[:, None] * torch.rand(d // 2, generator=g) * 3
    angles = torch.cat([angles, angles if symmetric else angles * 0.37 + 1.0], -1)[None]
    return angles.cos(), angles.sin()


@pytest.mark.parametrize("symmetric", [True, False])
def test_modernbert_rotary_is_transformers_apply_rotary_pos_emb_with_its_transpose_as_gradient(symmetric):
    """``_RotaryQKV`` against transformers' ``apply_rotary_pos_emb`` on the same bfloat16
    projection: the keys bit for bit (both compute in float32 and round once) where the halves
    share their angles, as ModernBERT's do; the scaled queries, the keys with unrelated halves
    and the input's gradient to bfloat16's rounding of the float64 formula and of its
    autograd; the values passed through, their gradient too."""
    from transformers.models.modernbert.modeling_modernbert import apply_rotary_pos_emb, rotate_half

    B, T, heads, d = 3, 13, 2, 8
    torch.manual_seed(1)
    qkv = torch.randn(B, T, 3 * heads * d).bfloat16().requires_grad_()
    cos, sin = _rope(T, d, 0, symmetric)
    scale = d ** -0.5
    q, k, v = fast._RotaryQKV.apply(qkv, cos, sin, heads, scale)
    assert q.dtype == k.dtype == v.dtype == torch.bfloat16 and q.shape == (B, heads, T, d)

    x = qkv.detach().view(B, T, 3, heads, d)
    tq, tk, tv = (x[:, :, i].transpose(1, 2) for i in range(3))
    theirs_q, theirs_k = apply_rotary_pos_emb(tq, tk, cos, sin)
    if symmetric:
        assert torch.equal(k, theirs_k)
    x64 = qkv.detach().double().requires_grad_()
    y = x64.view(B, T, 3, heads, d)
    c, s = cos.double()[:, None], sin.double()[:, None]
    ref_q = (y[:, :, 0].transpose(1, 2) * c + rotate_half(y[:, :, 0].transpose(1, 2)) * s) * scale
    ref_k = y[:, :, 1].transpose(1, 2) * c + rotate_half(y[:, :, 1].transpose(1, 2)) * s
    ulp = 2.0 ** -8  # bfloat16 keeps 8 significant bits: one rounding is within half of this, relative
    for mine, ref in ((q, ref_q), (k, ref_k)):
        assert float(((mine.double() - ref).abs() / ref.abs().clamp_min(1e-2)).max()) <= ulp
    assert torch.equal(v, tv)
    assert not torch.equal(q, (theirs_q.float() * scale).bfloat16())  # scaled before its rounding, not after

    w = [torch.randn(q.shape) for _ in range(3)]
    torch.autograd.backward([q, k, v], [t.bfloat16() for t in w])
    ref = sum((r * t.double()).sum() for r, t in zip((ref_q, ref_k, y[:, :, 2].transpose(1, 2)), w))
    ref.backward()
    err = (qkv.grad.double() - x64.grad).abs()
    assert float(err.max()) <= 2 * ulp * float(x64.grad.abs().max())
    assert float(err.view(B, T, 3, heads, d)[:, :, 2].max()) <= ulp * float(x64.grad.abs().max())  # values
    assert float(err.view(B, T, 3, heads, d)[:, :, :2].max()) > 0  # the gradient did go through the rotation


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fast_cross_entropy_is_torch_s_loss_and_gradient(dtype):
    """``fast.cross_entropy`` against torch's ``F.cross_entropy`` in float64 (loss and autograd
    gradient), a scaled loss included, and a row whose target's probability underflows float32
    (a logit 200 below the row's largest) where -log softmax would read infinity."""
    torch.manual_seed(2)
    logits = (torch.randn(40, 300) * 4)
    logits[7, 0] = -200.0
    logits[7, 1] = 0.0
    targets = torch.randint(0, 300, (40,))
    targets[7] = 0
    z = logits.to(dtype).requires_grad_()
    z64 = z.detach().double().requires_grad_()
    ref = F.cross_entropy(z64, targets)
    (0.7 * ref).backward()
    mine = fast.cross_entropy(z, targets)
    (0.7 * mine).backward()
    assert mine.dtype == torch.float32 and z.grad.dtype == dtype
    assert abs(float(mine) - float(ref)) < 1e-5 * float(ref)
    assert float(ref) > 200.0 / 40  # the underflowing row counts its whole loss
    tol = 1e-6 if dtype == torch.float32 else 2.0 ** -8
    assert float((z.grad.double() - z64.grad).abs().max()) <= tol * float(z64.grad.abs().max())


def test_the_trainer_s_mlm_loss_takes_the_fast_cross_entropy_within_fast_kernels_only(monkeypatch):
    """Within ``fast_kernels`` the Objective's MLM loss is ``fast.cross_entropy`` (a spy), with
    the stock loss's value; outside it, and for DistilBERT (whose distillation reads the
    logits), torch's."""
    import transformers as T
    from transformers import AutoTokenizer

    from models.registry.zoo_entries import zoo_folder
    from models.zoo import families as zm

    calls = []
    real = zm.fast_cross_entropy
    monkeypatch.setattr(zm, "fast_cross_entropy", lambda *a: calls.append(1) or real(*a))
    tok = AutoTokenizer.from_pretrained(zoo_folder("mini-bert"))
    shape = zm.Shape(layers=2, hidden=32, heads=2, ffn=64, vocab=len(tok), max_len=16)
    torch.manual_seed(0)
    teacher = T.BertForPreTraining(T.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=16))
    ids = torch.randint(5, 90, (2, 9))
    labels = torch.full_like(ids, -100)
    labels[:, 3] = ids[:, 3]
    inputs = ids.clone()
    inputs[:, 3] = tok.mask_token_id
    args = (ids, torch.ones_like(ids), torch.zeros_like(ids), inputs, labels, torch.tensor([0, 1]))
    for family, fast_calls in (("mini-bert", 1), ("mini-distilbert", 0)):
        calls.clear()
        t = teacher if family == "mini-distilbert" else None
        objective = zm.Objective(family, zm.build_models(family, tok, shape, t, dropout=0.0), t)
        teacher.eval()  # as the trainer keeps it (its dropout would draw)
        stock, _ = objective(*args)
        assert not calls
        with fast.fast_kernels(objective):
            mine, _ = objective(*args)
        assert len(calls) == fast_calls and objective.fast_loss is False  # restored after the block
        torch.testing.assert_close(mine, stock, rtol=1e-6, atol=1e-6)
