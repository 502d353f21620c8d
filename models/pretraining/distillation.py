"""Distillation, live: what do a teacher's soft targets buy a small student at a fixed budget?

DistilBERT's question (Sanh et al. 2019) in miniature. A small BERT student (random
init, the teacher's tokenizer) is trained **twice** from the same seed, on the same
batches with the same masks, for the same number of steps:

* distilled:  alpha x T^2 x KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) x MLM
  (the soft targets at every masked position; Hinton et al. 2015's T^2 keeps the gradients'
  scale);
* MLM alone:  the masked-LM cross-entropy only.

Both are scored on the same held-out sentences (``data/heldout.txt``) with the same fixed
masks: masked-token accuracy and MLM loss. DistilBERT also used a hidden-state cosine loss
and initialised the student from the teacher's layers; neither is done here (the student
is narrower than the teacher and starts from random weights).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForMaskedLM

from ..errors import InputError
from ..mlm.masked_head import batch_masked_logits, gather_positions
from ..registry import catalogue
from ..runtime.loading import BUILD_LOCK, load_model
from ..runtime.run_store import register_kind
from ..tasks.live_training import Budget, check_rate, check_seconds, exclusive_run, parameter_count
from ..validation import as_real, check_int
from .masking import MaskingPolicy, apply_masking
from .mlm_data import collate, encode_sentences, read_sentences

MAX_DISTILL_STEPS = 2000
STUDENT_SHAPES = {  # name -> (layers, hidden, heads)
    "1x64": (1, 64, 2),
    "2x64": (2, 64, 2),
    "2x128": (2, 128, 4),
    "4x128": (4, 128, 4),
}
DISTILL_BATCH = 32
EVAL_SENTENCES = 128
EVAL_POINTS = 8  # held-out scores on each curve
MAX_LEN = 64


@dataclass(frozen=True)
class DistillRun:
    """One student's run."""

    label: str  # "soft targets + MLM" or "MLM alone"
    alpha: float
    train_loss: tuple[float, ...]  # the objective it minimised, per step
    train_mlm_loss: tuple[float, ...]  # its MLM cross-entropy, per step (comparable across runs)
    eval_steps: tuple[int, ...]
    eval_accuracy: tuple[float, ...]  # held-out masked-token accuracy at those steps
    eval_loss: tuple[float, ...]  # held-out MLM loss at those steps
    final_accuracy: float
    final_loss: float


@dataclass(frozen=True)
class DistillResult:
    teacher_key: str
    student_shape: str
    student_parameters: int
    teacher_parameters: int
    steps: int
    steps_done: int  # per run (both run the same number)
    alpha: float
    temperature: float
    seed: int
    distilled: DistillRun
    mlm_only: DistillRun
    teacher_accuracy: float  # the teacher on the same held-out masks
    winner: str  # by held-out MLM loss (lower wins): "soft targets + MLM", "MLM alone" or "tie"
    loss_gain: float  # MLM alone - distilled, held-out MLM loss (nats per masked token; > 0: distilled better)
    accuracy_gain: float  # distilled - MLM alone, held-out masked-token accuracy (points of 1)
    seconds: float
    stopped: str
    note: str


register_kind(DistillResult, lambda result: None, lambda result, _payload, _spec: result)  # plain data only


def _check_float(name: str, value, low: float, high: float, low_open: bool = False) -> float:
    x = as_real(value)
    if not ((low < x) if low_open else (low <= x)) or not x <= high:
        raise InputError(f"{name} must be {'above' if low_open else 'at least'} {low:g} and at most {high:g}; "
                         f"got {value!r}.")
    return x


def _student(shape: str, teacher, seed: int) -> BertForMaskedLM:
    layers, hidden, heads = STUDENT_SHAPES[shape]
    tc = teacher.config
    config = BertConfig(vocab_size=tc.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=4 * hidden,
                        max_position_embeddings=max(MAX_LEN, 128), pad_token_id=tc.pad_token_id or 0)
    torch.manual_seed(seed)
    with BUILD_LOCK:
        return BertForMaskedLM(config)


def _masked(batch_seqs, tokenizer, seed: int):
    special = set(tokenizer.all_special_ids)
    ids, attention, special_mask = collate(batch_seqs, tokenizer.pad_token_id or 0, special)
    inputs, labels, _ = apply_masking(ids, special_mask, MaskingPolicy(), mask_token_id=tokenizer.mask_token_id,
                                      vocab_size=len(tokenizer), generator=torch.Generator().manual_seed(seed))
    return inputs, attention, labels


def _logits_at(model, inputs, attention, keep) -> torch.Tensor:
    """(M, V) MLM logits at the masked positions ``keep`` (B, T) only, in ``logits[keep]``'s
    order: the head runs on those rows alone (it acts position by position, so the values are
    the full head's), which is most of a small student's step. With gradients for a student in
    training; the teacher and the evaluations run without."""
    rows, cols = (index.tolist() for index in keep.nonzero(as_tuple=True))
    if not torch.is_grad_enabled() or not model.training:
        return batch_masked_logits(model, {"input_ids": inputs, "attention_mask": attention}, rows, cols)
    with gather_positions(model, cols, inputs.device, rows=rows) as (row_index, col_index):
        logits = model(input_ids=inputs, attention_mask=attention).logits
    if logits.shape[1] != len(cols):  # a head that re-pads its output: every position came back
        return logits[row_index, col_index]
    return logits[0]


def _evaluate(model, eval_batches) -> tuple[float, float]:
    """(masked-token accuracy, MLM loss per masked token) on fixed masked batches; the model's
    train / eval mode is left as it was."""
    was_training = model.training
    model.eval()
    correct = total = 0
    loss_sum = 0.0
    with torch.inference_mode():
        for inputs, attention, labels in eval_batches:
            keep = labels != -100
            logits = _logits_at(model, inputs, attention, keep).float()  # (M, V)
            loss_sum += float(F.cross_entropy(logits, labels[keep], reduction="sum"))
            correct += int((logits.argmax(-1) == labels[keep]).sum())
            total += int(keep.sum())
    model.train(was_training)
    return correct / max(1, total), loss_sum / max(1, total)


def distill(teacher_key: str, student_shape: str = "2x64", steps: int = 150, alpha: float = 0.5,
            temperature: float = 2.0, seed: int = 0, learning_rate: float = 2e-3,
            max_seconds: float = 240) -> DistillResult:
    """Train a small student twice, same seed, data, masks and steps: with the teacher's soft
    targets (+ MLM, weight ``alpha`` on the soft part) and with MLM alone; both curves and held-out
    masked-token accuracy. The teacher needs an MLM head; the student uses its tokenizer.
    ``max_seconds``: the first run gets half; the second runs the same steps (so about as long).
    student_shape: one of ``STUDENT_SHAPES``; steps: 1 to 2000; alpha: above 0, at most 1;
    temperature: 0.5 to 20; seed: 0 to 2**31 - 1; learning_rate: between 0 and 1; max_seconds:
    1 to 300. Anything else (a fraction of a step, True for a number) is an ``InputError``."""
    spec = catalogue.get_spec(teacher_key)
    if not isinstance(student_shape, str) or student_shape not in STUDENT_SHAPES:
        raise InputError(f"Unknown student shape {student_shape!r}; choose one of: {', '.join(STUDENT_SHAPES)} "
                         "(layers x hidden width).")
    steps = check_int(steps, "steps", 1, MAX_DISTILL_STEPS)
    alpha = _check_float("alpha", alpha, 0, 1, low_open=True)
    temperature = _check_float("temperature", temperature, 0.5, 20)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    lr = check_rate(learning_rate)
    seconds = check_seconds(max_seconds)
    teacher = load_model(spec, head="mlm")
    with exclusive_run(f"distilling {teacher_key} into a {student_shape} student"):
        return _distill(teacher, teacher_key, student_shape, steps, alpha, temperature, seed, lr, seconds)


def _distill(teacher, teacher_key, shape, steps, alpha, temperature, seed, lr, seconds) -> DistillResult:
    tokenizer, device = teacher.tokenizer, teacher.device
    root = catalogue.REPO_ROOT / "data"
    train_seqs = encode_sentences(tokenizer, read_sentences(root / "train_sample.txt"), MAX_LEN)
    eval_seqs = encode_sentences(tokenizer, read_sentences(root / "heldout.txt")[:EVAL_SENTENCES], MAX_LEN)
    rng = np.random.default_rng(seed)
    batches = [[train_seqs[i] for i in rng.choice(len(train_seqs), DISTILL_BATCH, replace=False)] for _ in range(steps)]
    eval_batches = [tuple(t.to(device) for t in _masked(eval_seqs[i:i + 64], tokenizer, 10_000 + i))
                    for i in range(0, len(eval_seqs), 64)]
    teacher_accuracy, _ = _evaluate(teacher.model, eval_batches)
    started = time.perf_counter()
    # The first run gets half the time; the second runs exactly the steps the first ran (no time
    # limit of its own, only a stop request can cut it), so both students see the same batches.
    first_budget = Budget(seconds / 2)
    distilled = _one_run("soft targets + MLM", alpha, teacher, shape, batches, eval_batches, temperature, seed,
                         lr, first_budget)
    second_budget = Budget(float("inf"))
    mlm_only = _one_run("MLM alone", 0.0, teacher, shape, batches[:len(distilled.train_loss)], eval_batches,
                        temperature, seed, lr, second_budget)
    stopped = first_budget.why
    if len(mlm_only.train_loss) < len(distilled.train_loss):
        stopped = f"the MLM-alone run {second_budget.why}: fewer steps than the distilled one, not a fair comparison"
    gain = distilled.final_accuracy - mlm_only.final_accuracy
    loss_gain = mlm_only.final_loss - distilled.final_loss
    winner = "tie" if abs(loss_gain) < 1e-4 else ("soft targets + MLM" if loss_gain > 0 else "MLM alone")
    student_params = parameter_count(_student(shape, teacher.model, seed))
    elapsed = time.perf_counter() - started
    note = (f"Two {shape} BERT students (random init, seed {seed}, {student_params:,} parameters, {teacher_key}'s "
            f"tokenizer) trained here for {len(distilled.train_loss)} step(s) of {DISTILL_BATCH} sentences of "
            f"data/train_sample.txt, the same batches and masks (15 %, 80/10/10), AdamW lr {lr:g}: one on "
            f"{alpha:g} x soft targets of {teacher_key} (T = {temperature:g}) + {1 - alpha:g} x MLM, one on MLM "
            f"alone. Scored on {len(eval_seqs)} held-out sentences (data/heldout.txt) with fixed masks: "
            f"{winner}{' won' if winner != 'tie' else ''} on held-out MLM loss by {abs(loss_gain):.3f} nats per "
            f"masked token ({distilled.final_loss:.3f} vs {mlm_only.final_loss:.3f}); masked-token accuracy "
            f"{distilled.final_accuracy:.1%} vs {mlm_only.final_accuracy:.1%} ({gain * 100:+.1f} points; the teacher "
            f"{teacher_accuracy:.1%}).")
    return DistillResult(
        teacher_key=teacher_key, student_shape=shape, student_parameters=student_params,
        teacher_parameters=parameter_count(teacher.model), steps=steps, steps_done=len(distilled.train_loss),
        alpha=alpha, temperature=temperature, seed=seed, distilled=distilled, mlm_only=mlm_only,
        teacher_accuracy=teacher_accuracy, winner=winner, loss_gain=loss_gain, accuracy_gain=gain, seconds=elapsed,
        stopped=stopped, note=note,
    )


def _one_run(label, alpha, teacher, shape, batches, eval_batches, temperature, seed, lr, budget) -> DistillRun:
    device, tokenizer = teacher.device, teacher.tokenizer
    with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
        student = _student(shape, teacher.model, seed).to(device)
        student.train()
        optimiser = torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=0.01)
        losses, mlm_losses, eval_steps, eval_acc, eval_loss = [], [], [], [], []
        for step, seqs in enumerate(batches, start=1):
            if budget.over():
                break
            inputs, attention, labels = (t.to(device) for t in _masked(seqs, tokenizer, seed * 100_003 + step))
            keep = labels != -100
            logits = _logits_at(student, inputs, attention, keep)  # (M, V)
            mlm = F.cross_entropy(logits, labels[keep])
            loss = mlm
            if alpha > 0:
                soft = _logits_at(teacher.model, inputs, attention, keep).float()
                soft = F.softmax(soft.clone() / temperature, dim=-1)  # (M, V)
                kl = F.kl_div(F.log_softmax(logits / temperature, dim=-1), soft, reduction="batchmean")
                loss = alpha * temperature ** 2 * kl + (1 - alpha) * mlm
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
            mlm_losses.append(float(mlm.detach()))
            if step % max(1, len(batches) // EVAL_POINTS) == 0 or step == len(batches):
                accuracy, held_loss = _evaluate(student, eval_batches)
                eval_steps.append(step)
                eval_acc.append(accuracy)
                eval_loss.append(held_loss)
        if not eval_steps or eval_steps[-1] != len(losses):
            accuracy, held_loss = _evaluate(student, eval_batches)
            eval_steps.append(len(losses))
            eval_acc.append(accuracy)
            eval_loss.append(held_loss)
    return DistillRun(label, alpha, tuple(losses), tuple(mlm_losses), tuple(eval_steps), tuple(eval_acc),
                      tuple(eval_loss), eval_acc[-1], eval_loss[-1])
