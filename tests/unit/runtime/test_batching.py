"""Micro-batching: concurrent calls share a forward and each gets what it would get alone."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from helpers import wait_until
from models import fill_mask
from models.runtime.batching import MicroBatcher

TEXTS = [
    "The capital of France is [MASK].",
    "The [MASK] sat on the mat.",
    "Paris is the [MASK] of [MASK] and the [MASK] of fashion.",
    "A [MASK] day.",
    "She opened the [MASK], walked into the [MASK] and sat down at the long wooden [MASK] by the window.",
]


def _held(batcher: MicroBatcher, n_waiting: int):
    """Wrap the batcher's forward so that its first batch waits until ``n_waiting`` calls queue."""
    run, gate, sizes = batcher._run_batch, threading.Event(), []

    def held(items):
        sizes.append(len(items))
        if len(sizes) == 1:
            gate.wait(timeout=60)
        return run(items)

    batcher._run_batch = held
    return gate, sizes, lambda: len(batcher._pending) >= n_waiting


def _in_threads(calls):
    """Run each ``call()`` in a thread of its own; their results (or errors) in order."""
    out = [None] * len(calls)

    def work(i):
        try:
            out[i] = calls[i]()
        except BaseException as exc:  # noqa: BLE001  (returned for the test to check)
            out[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    return threads, out


def _in_order(batcher: MicroBatcher, calls):
    """Start the calls one by one, each once the one before is running or queued."""
    threads, outs = [], []
    for k, call in enumerate(calls):
        more, out = _in_threads([call])
        threads += more
        outs.append(out)
        wait_until(lambda: batcher._busy and len(batcher._pending) == k, f"call {k} to queue")
    return threads, outs


def _burst(batcher: MicroBatcher, n: int):
    """``n`` calls at once, all but the first queued behind it: (results, batch sizes, threads)."""
    gate, sizes, queued = _held(batcher, n - 1)
    threads, out = _in_threads([lambda i=i: batcher.submit("g", i) for i in range(n)])
    wait_until(queued, f"{n - 1} calls to queue behind the first")
    gate.set()
    for t in threads:
        t.join(timeout=60)
    return out, sizes, threads


def test_calls_that_queue_share_one_batch_and_get_their_own_results():
    batcher = MicroBatcher(lambda items: [x * 10 for x in items], max_cost=100)
    out, sizes, _ = _burst(batcher, 5)
    assert sorted(out) == [0, 10, 20, 30, 40]
    assert sorted(sizes) == [1, 4]  # the first ran alone; the four that queued, together
    assert batcher.calls == 5 and batcher.batches == 2


def test_groups_and_budget_split_batches():
    seen = []
    batcher = MicroBatcher(lambda items: seen.append(list(items)) or list(items), max_cost=20)
    gate, sizes, _ = _held(batcher, 0)
    queued = [("a", 5), ("b", 5), ("a", 5), ("a", 10), ("b", 5)]
    calls = [lambda: batcher.submit("first", ("first", -1))]
    calls += [lambda k=k, g=g, c=c: batcher.submit(g, (g, k), cost=c) for k, (g, c) in enumerate(queued)]
    threads, outs = _in_order(batcher, calls)
    gate.set()
    for t in threads:
        t.join(timeout=60)
    assert [out[0] for out in outs[1:]] == [("a", 0), ("b", 1), ("a", 2), ("a", 3), ("b", 4)]
    # First in line leads: "a" 0 and 2 (2 x 5 <= 20; with 3, 3 x 10 > 20), then "b" 1 and 4,
    # then "a" 3 alone: never two groups in one forward, never over the budget.
    assert seen == [[("first", -1)], [("a", 0), ("a", 2)], [("b", 1), ("b", 4)], [("a", 3)]]


def test_an_error_reaches_every_caller_of_its_batch_and_the_batcher_goes_on():
    def run(items):
        if "bad" in items:
            raise RuntimeError("out of memory")
        return items

    batcher = MicroBatcher(run, max_cost=100)
    gate, _, _ = _held(batcher, 0)
    threads, outs = _in_order(batcher, [lambda: batcher.submit("g", "ok"), lambda: batcher.submit("g", "bad"),
                                        lambda: batcher.submit("g", "also")])
    gate.set()
    for t in threads:
        t.join(timeout=60)
    assert outs[0] == ["ok"]
    assert [type(out[0]) for out in outs[1:]] == [RuntimeError, RuntimeError]  # one batch, one error
    assert batcher.submit("g", "later") == "later"


# --- fill-mask: a batched forward returns what each text gets alone ---------------------------


@pytest.fixture(scope="module")
def reference_pipe(mlm_loaded):
    import copy

    from transformers import pipeline

    model = copy.deepcopy(mlm_loaded.model)  # the pipeline moves the model it is given
    return pipeline("fill-mask", model=model, tokenizer=mlm_loaded.tokenizer, device=mlm_loaded.device,
                    dtype=mlm_loaded.dtype)


def test_batched_forward_equals_single_forwards(mlm_loaded):
    from models.mlm.fill_mask import _forward_batch, encode_masks, mask_spans

    encoded = [encode_masks(mlm_loaded, t, mask_spans(t)) for t in TEXTS]
    batched = _forward_batch([(mlm_loaded, e) for e in encoded])
    tolerance = 1e-4 if mlm_loaded.dtype == torch.float32 else 5e-2  # logits, not probabilities
    for enc, logits in zip(encoded, batched):
        (alone,) = _forward_batch([(mlm_loaded, enc)])
        assert logits.shape == alone.shape == (len(enc.positions), mlm_loaded.model.config.vocab_size)
        assert torch.allclose(logits, alone, atol=tolerance, rtol=0)
        assert torch.equal(logits.softmax(-1).topk(10).indices, alone.softmax(-1).topk(10).indices)


def test_concurrent_fill_mask_requests_batched_match_the_pipeline(mlm_key, mlm_loaded, reference_pipe):
    from models.mlm.fill_mask import _BATCHER as batcher

    original = batcher._run_batch
    gate, sizes, queued = _held(batcher, len(TEXTS))
    try:
        first, first_out = _in_threads([lambda: fill_mask(mlm_key, "A [MASK] day.", top_k=10)])
        wait_until(lambda: sizes, "the first forward to start")
        threads, out = _in_threads([lambda t=t: fill_mask(mlm_key, t, top_k=10) for t in TEXTS])
        wait_until(queued, "every text to queue behind the first")
        gate.set()
        for t in first + threads:
            t.join(timeout=120)
    finally:
        batcher._run_batch = original
    assert sizes == [1, len(TEXTS)]  # the texts really shared one forward
    exact = mlm_loaded.dtype == torch.float32
    for text, result in zip(TEXTS, out):
        assert not isinstance(result, BaseException), result
        expected = reference_pipe(text, top_k=10)
        expected = [expected] if isinstance(expected[0], dict) else expected
        assert len(result.masks) == len(expected)
        for mask, ref in zip(result.masks, expected):
            if exact:
                assert [p.token_id for p in mask.predictions] == [r["token"] for r in ref]
            scores = {r["token"]: r["score"] for r in ref}
            for p in mask.predictions:
                if p.token_id in scores:
                    assert abs(p.score - scores[p.token_id]) <= (1e-5 if exact else 2e-3)


# --- map_forwards: two batches at once on a CPU ------------------------------------------


def test_map_forwards_keeps_order_and_runs_two_at_once_on_a_cpu(monkeypatch):
    from models.runtime import batching

    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    both_in, threads, order = threading.Barrier(2, timeout=30), set(), []

    def run(batch):
        threads.add(threading.get_ident())
        if batch < 2:
            both_in.wait()  # the first two batches must be running at the same time
        return batch * 10

    for result in batching.map_forwards(run, list(range(7)), torch.device("cpu")):
        order.append(result)
    assert order == [0, 10, 20, 30, 40, 50, 60]
    assert len(threads) == 2 and threading.get_ident() not in threads


def test_map_forwards_reads_ahead_only_a_few_batches(monkeypatch):
    from models.runtime import batching

    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    started = []
    results = batching.map_forwards(lambda b: started.append(b) or b, list(range(20)), torch.device("cpu"))
    assert next(results) == 0
    time.sleep(0.2)  # the pool had time to run whatever was submitted
    assert len(started) <= batching.CPU_FORWARD_WORKERS + 2
    results.close()  # a caller that stops early: what was queued is cancelled
    time.sleep(0.2)
    assert len(started) <= batching.CPU_FORWARD_WORKERS + 2


def test_map_forwards_raises_a_batch_error_and_stays_serial_off_the_cpu(monkeypatch):
    from models.runtime import batching

    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)

    def fail_on_three(batch):
        if batch == 3:
            raise ValueError("batch three")
        return batch

    with pytest.raises(ValueError, match="batch three"):
        list(batching.map_forwards(fail_on_three, list(range(6)), torch.device("cpu")))
    seen = []
    out = list(batching.map_forwards(lambda b: seen.append(threading.get_ident()) or b, [1, 2, 3], torch.device("meta")))
    assert out == [1, 2, 3] and set(seen) == {threading.get_ident()}  # one after another, here
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    seen.clear()
    list(batching.map_forwards(lambda b: seen.append(threading.get_ident()) or b, [1, 2, 3], torch.device("cpu")))
    assert set(seen) == {threading.get_ident()}  # one thread: nothing to share out


def test_forward_workers_take_their_share_of_the_threads_and_leave_the_process_setting():
    """Each worker runs torch's kernels on its share of the cores (one of two here); the
    process's own setting, and what a new thread reads, stay as they were."""
    from models.runtime import batching

    before = torch.get_num_threads()
    pool = batching._forward_pool()
    share = max(1, before // batching.CPU_FORWARD_WORKERS)
    seen = {pool.submit(torch.get_num_threads).result() for _ in range(8)}
    assert seen == {share}
    assert torch.get_num_threads() == before
    fresh = []
    thread = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    assert fresh == [before]
