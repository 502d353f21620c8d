"""Benchmark: the encoder's forward pass by length, full vs half precision, and the MFU of ``embed``.

    python -m bench.forward [--model minilm-l6] [--lengths 8 32 128 512] [--batches 1 32]
                            [--runs 20] [--repeat 3] [--device auto] [--peak-tflops X] [--json]

Forward by length: the core's loaded model (``load_model(get_spec(key))``) on random token ids of each
length and batch size, full attention mask, under ``inference_mode``; the median of
``--runs`` calls after a warm-up, measured ``--repeat`` times (median and range printed).
On a GPU it runs in float32 (a copy of the model) and in the core's float16; on the CPU in
float32 only (the core never runs half precision there). FLOPs are counted once per shape
by torch's ``FlopCounterMode`` (matrix products and attention as torch counts them, padding
included); achieved FLOP/s = FLOPs / median seconds.

MFU of ``embed``: the FLOPs of one ``embed(minilm-l6, 256 sentences)`` call (the embeddings
bench's short and long mixes), counted with the oneDNN path off so that the counter sees
every product (the same products either way), divided by the median time of the call as
users run it, divided by the device's peak for the dtype: dense float16 tensor-core peak
on NVIDIA GPUs (a table of data-sheet figures, matched on the device name; ``--peak-tflops``
overrides). On the CPU there is no peak table: achieved GFLOP/s only.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from bench.bench_common import machine_line, onednn_choice, spread, spread_text, sync, without_onednn
from models import get_spec

# Data-sheet dense peaks in TFLOP/s (no sparsity): (name fragment, float16 tensor core, float32).
# The first fragment found in torch.cuda.get_device_name() wins, so variants come first.
PEAKS = (
    ("H200 NVL", 835.5, 60.3),
    ("H200", 989.4, 66.9),
    ("H100 NVL", 835.5, 60.3),
    ("H100 PCIe", 756.5, 51.2),
    ("H100", 989.4, 66.9),
    ("A100", 312.0, 19.5),
    ("L40S", 362.1, 91.6),
    ("L4", 121.0, 30.3),
)


def peak_flops(device: torch.device, dtype: torch.dtype, override_tflops: float | None = None):
    """(FLOP/s, where the figure comes from) for the device and dtype, or (None, why not)."""
    if override_tflops:
        return override_tflops * 1e12, f"--peak-tflops {override_tflops}"
    if device.type != "cuda":
        return None, "no peak table for this device"
    name = torch.cuda.get_device_name(device)
    for fragment, fp16, fp32 in PEAKS:
        if fragment in name:
            value = fp16 if dtype in (torch.float16, torch.bfloat16) else fp32
            return value * 1e12, f"{fragment} data sheet, dense {str(dtype).removeprefix('torch.')}: {value} TFLOP/s"
    return None, f"{name} is not in the peak table (pass --peak-tflops)"


def count_flops(call) -> int:
    """The FLOPs of ``call()`` as torch's ``FlopCounterMode`` counts them.

    The counter sees only the thread it runs in. On a CPU with two threads or more, ``embed``
    runs its batches on two pool threads (``map_forwards``, models/runtime/batching.py), and
    the count was 0; with one thread it runs them in this one: the same products, counted.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with FlopCounterMode(display=False) as counter:
            call()
    finally:
        torch.set_num_threads(threads)
    return int(counter.get_total_flops())


def _median_seconds(call, runs: int, device) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def forward_by_length(key: str, lengths, batches, runs: int, repeat: int, peak_override=None, say=print) -> list[dict]:
    from models import load_model

    loaded = load_model(get_spec(key), head="base")
    device = loaded.device
    models = {str(loaded.dtype).removeprefix("torch."): loaded.model}
    if device.type != "cpu" and loaded.dtype != torch.float32:
        models = {"float32": copy.deepcopy(loaded.model).float(), **models}
    vocab = int(loaded.model.config.vocab_size)
    rows = []
    generator = torch.Generator().manual_seed(0)
    say(f"\nforward by length: {key}, {', '.join(models)}, median of {runs} calls, {repeat} measurements")
    say(f"{'dtype':<8} {'batch':>5} {'tokens':>6} {'ms':>9} {'tokens/s':>11} {'GFLOP':>9} {'TFLOP/s':>8} {'MFU':>7}")
    for dtype_name, model in models.items():
        dtype = getattr(torch, dtype_name)
        peak, peak_why = peak_flops(device, dtype, peak_override)
        for batch in batches:
            for length in lengths:
                ids = torch.randint(1000, vocab, (batch, length), generator=generator).to(device)
                mask = torch.ones_like(ids)

                def call():
                    with torch.inference_mode():
                        model(input_ids=ids, attention_mask=mask)

                for _ in range(3):
                    call()
                sync(device)
                flops = count_flops(call)
                seconds = [_median_seconds(call, runs, device) for _ in range(repeat)]
                ms = spread([s * 1e3 for s in seconds])
                achieved = flops / ms["median"] * 1e3
                row = {"dtype": dtype_name, "batch": batch, "tokens": length, "ms": ms,
                       "tokens_per_s": batch * length / ms["median"] * 1e3, "flops": flops,
                       "tflops_per_s": achieved / 1e12, "mfu": achieved / peak if peak else None,
                       "peak": peak_why}
                rows.append(row)
                mfu = f"{row['mfu'] * 100:6.2f}%" if peak else "   n/a"
                say(f"{dtype_name:<8} {batch:>5} {length:>6} {ms['median']:>9.3f} {row['tokens_per_s']:>11.0f} "
                    f"{flops / 1e9:>9.2f} {row['tflops_per_s']:>8.3f} {mfu}  (ms range {ms['min']:.3f}-{ms['max']:.3f})")
    return rows


def embed_mfu(rounds: int, repeat: int, sentences: int = 256, peak_override=None, say=print) -> dict:
    from bench.embeddings import KEY, mixed_sentences, short_sentences
    from models import embed, load_model

    loaded = load_model(get_spec(KEY), head="base")
    device, dtype = loaded.device, loaded.dtype
    peak, peak_why = peak_flops(device, dtype, peak_override)
    out = {"model": KEY, "device": device.type, "dtype": str(dtype).removeprefix("torch."), "peak": peak_why,
           "mixes": {}}
    say(f"\nMFU of embed ({KEY}, {sentences} sentences, {out['dtype']} on {device.type}; peak: {peak_why})")
    for mix in ("short", "long"):
        texts = (short_sentences(sentences, 0) if mix == "short"
                 else mixed_sentences(sentences, 0, loaded.tokenizer))

        def call():
            embed(KEY, texts, pooling="mean", normalize=True)

        call()
        flops = without_onednn(lambda: count_flops(call))
        seconds = [_median_seconds(call, rounds, device) for _ in range(repeat)]
        rates = [flops / s for s in seconds]
        entry = {"flops": flops, "seconds": spread(seconds), "tflops_per_s": spread([r / 1e12 for r in rates]),
                 "sentences_per_s": spread([sentences / s for s in seconds]),
                 "mfu": spread([r / peak for r in rates]) if peak else None}
        out["mixes"][mix] = entry
        mfu = (f", MFU {spread_text([r / peak * 100 for r in rates])} %" if peak else "")
        say(f"  {mix}: {flops / 1e9:.1f} GFLOP a call, {spread_text([s * 1e3 for s in seconds], '{:.1f}')} ms, "
            f"{spread_text([r / 1e12 for r in rates], '{:.3f}')} TFLOP/s{mfu}")
    return out


def run(model: str = "minilm-l6", lengths=(8, 32, 128, 512), batches=(1, 32), runs: int = 20, repeat: int = 3,
        device: str = "auto", peak_override=None, quiet: bool = False, embed_sentences: int = 256) -> dict:
    from models import get_device, set_device

    set_device(device)
    say = (lambda *a: None) if quiet else print
    say(machine_line(get_device()))
    onednn_on, why = onednn_choice(get_device())
    say(why)
    return {"forward": forward_by_length(model, lengths, batches, runs, repeat, peak_override, say),
            "embed_mfu": embed_mfu(max(3, runs // 4), repeat, embed_sentences, peak_override, say),
            "onednn": onednn_on, "onednn_why": why}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-l6")
    parser.add_argument("--lengths", type=int, nargs="+", default=[8, 32, 128, 512])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="auto", choices=["cpu", "cuda", "mps", "auto"])
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's peak for its dtype")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args.model, args.lengths, args.batches, args.runs, args.repeat, args.device, args.peak_tflops)
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
