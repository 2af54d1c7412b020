"""``benchmark.py train``: training throughput of our model against a ``torch.nn.Transformer`` reference.

Ours runs twice, with its speed kernels (``use_speed_kernels``: fused loss, 16-bit dropout masks; the
ratio's target) and without.  The models have the same sizes (the ``cpu`` preset: d_model 128, 4 heads, d_ff 256,
4+4 layers, the same vocabulary) and train on the same Multi30k token batches, in
one run, steps interleaved (ours, ours without kernels, reference, ours, ...) so that machine noise hits
all alike.  The reference is built the way the seed lessons build it: separate
source/target embeddings and output layer, sinusoidal positions,
``nn.Transformer(batch_first=True)``, ``nn.CrossEntropyLoss(label_smoothing=0.1)``.
With ``--bf16`` ours also runs a third time, under bf16 autocast (``train --precision bf16``: the same weights,
float32 master weights and optimizer), and the ratio of its tokens/s to ours in float32 is printed: above 1 where
the CPU has bf16 units (AMX, AVX512-BF16), below 1 where it has not.
Also printed: achieved GFLOP/s (matmul FLOPs counted from the shapes) as a share
of this machine's fp32 matmul peak, measured here with large ``torch.mm`` calls.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import time
from pathlib import Path
from typing import Dict, List, Tuple

import torch
import torch.nn as nn

from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.training.data import default_data_dir, collate, encode_pairs, load_split, token_batches
from transformer_hub.model import sinusoid_table
from transformer_hub.model.kernels import use_speed_kernels
from transformer_hub.training.precision import autocast, cpu_flags, BF16_FLAGS

BF16 = "ours, bf16 autocast"

PLAIN = "ours, no speed kernels"  # the paper's model as built: nn.Dropout and F.cross_entropy


class SeedLessonTransformer(nn.Module):
    """The reference: ``torch.nn.Transformer`` with embeddings, sinusoids and an output layer around it."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.register_buffer("pe", sinusoid_table(cfg.max_len, cfg.d_model), persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)
        self.transformer = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers,
                                          cfg.d_ff, cfg.dropout, batch_first=True)
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
        self.loss = nn.CrossEntropyLoss(ignore_index=cfg.pad_id, label_smoothing=0.1)

    def step_loss(self, src, tgt_in, tgt_out):
        scale = math.sqrt(self.cfg.d_model)
        s = self.dropout(self.src_embed(src) * scale + self.pe[: src.size(1)])
        t = self.dropout(self.tgt_embed(tgt_in) * scale + self.pe[: tgt_in.size(1)])
        causal = self.transformer.generate_square_subsequent_mask(tgt_in.size(1))
        h = self.transformer(s, t, tgt_mask=causal, src_key_padding_mask=src == self.cfg.pad_id,
                             tgt_key_padding_mask=tgt_in == self.cfg.pad_id,
                             memory_key_padding_mask=src == self.cfg.pad_id)
        logits = self.generator(h)
        return self.loss(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))


def matmul_flops(cfg: TransformerConfig, src, tgt_in) -> float:
    """Forward + backward (3x forward) FLOPs of the matmuls: projections, FFNs, attention scores, output layer."""
    d, f = cfg.d_model, cfg.d_ff
    B, S, T = src.size(0), src.size(1), tgt_in.size(1)
    enc = cfg.n_encoder_layers * (B * S * (2 * 4 * d * d + 2 * 2 * d * f) + 2 * 2 * B * S * S * d)
    dec = cfg.n_decoder_layers * (B * T * (2 * 4 * d * d + 2 * 4 * d * d + 2 * 2 * d * f)
                                  + 2 * 2 * B * T * T * d + 2 * 2 * B * T * S * d)
    out = 2 * B * T * d * cfg.tgt_vocab_size
    return 3.0 * (enc + dec + out)


def matmul_peak(seconds: float = 3.0, n: int = 1024) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        torch.mm(a, b)
        count += 1
    return 2 * n ** 3 * count / (time.perf_counter() - start) / 1e9


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=str(default_data_dir()))
    p.add_argument("--model", default=None, help="take the tokenizer and sizes from this save_pretrained folder")
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--steps", type=int, default=12, help="timed steps per model (after 2 warm-up steps)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--bf16", action="store_true", help="also time ours under bf16 autocast (train --precision bf16)")
    p.add_argument("--out", default=None, help="write the results as JSON here")


def bf16_loss(model: Transformer, batch) -> torch.Tensor:
    """The training step's loss under bf16 autocast, as ``train --precision bf16`` computes it."""
    with autocast("bf16", torch.device("cpu")):
        return model(batch[0], batch[1], batch[2], label_smoothing=0.1).float()


def time_steps(runs: Dict, batches: List, cfg: TransformerConfig) -> Tuple[Dict[str, float], float, float]:
    """Each run's training steps on the same batches, interleaved; the first two are warm-up.  Returns the seconds
    of each run, the target tokens and the matmul FLOPs of the timed steps."""
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
                  for name, (m, _) in runs.items()}
    seconds = {name: 0.0 for name in runs}
    tokens = flops = 0.0
    for i, batch in enumerate(batches):
        for name, (model, loss_fn) in runs.items():
            model.train()
            start = time.perf_counter()
            loss = loss_fn(batch)
            loss.backward()
            optimizers[name].step()
            optimizers[name].zero_grad(set_to_none=True)
            if i >= 2:
                seconds[name] += time.perf_counter() - start
        if i >= 2:
            tokens += int((batch[2] != cfg.pad_id).sum())
            flops += matmul_flops(cfg, batch[0], batch[1])
    return seconds, tokens, flops


def bench_train(args: argparse.Namespace) -> Dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    pairs = load_split(args.data_dir, "train", "en", "de")[:6000]
    if args.model:
        shipped = Transformer.from_pretrained(args.model)
        tok, cfg = shipped.tokenizer, TransformerConfig.from_dict({**shipped.config.to_dict(), "dropout": 0.3})
    else:
        tok = Tokenizer.train([p[0] for p in pairs], [p[1] for p in pairs], vocab_size=10000)
        cfg = TransformerConfig.preset("cpu", src_vocab_size=tok.src_vocab_size, tgt_vocab_size=tok.tgt_vocab_size)
    examples = encode_pairs(pairs, tok, cfg.bos_id, cfg.eos_id, cfg.max_len)
    batches = [collate([examples[i] for i in b], cfg.pad_id)
               for b in token_batches(examples, args.max_tokens, seed=0, epoch=0)[: args.steps + 2]]
    torch.manual_seed(0)
    plain, ref = Transformer(cfg), SeedLessonTransformer(cfg)
    ours = use_speed_kernels(copy.deepcopy(plain))  # the same weights, the fused loss and 16-bit dropout masks
    runs = {
        "ours": (ours, lambda b: ours(b[0], b[1], b[2], label_smoothing=0.1)),
        PLAIN: (plain, lambda b: plain(b[0], b[1], b[2], label_smoothing=0.1)),
        "torch.nn.Transformer": (ref, lambda b: ref.step_loss(*b)),
    }
    if args.bf16:
        half = copy.deepcopy(ours)  # the same weights again, float32, its forward and loss in bf16
        runs[BF16] = (half, lambda b: bf16_loss(half, b))
    seconds, tokens, flops = time_steps(runs, batches, cfg)
    peak = matmul_peak()
    result = {"threads": torch.get_num_threads(), "steps": len(batches) - 2, "max_tokens": args.max_tokens,
              "matmul_peak_gflops": round(peak, 1), "config": cfg.to_dict()}
    for name in runs:
        gflops = flops / seconds[name] / 1e9
        result[name] = {"target_tokens_per_s": round(tokens / seconds[name]), "gflops": round(gflops, 1),
                        "share_of_peak": round(gflops / peak, 3), "parameters": sum(p.numel() for p in runs[name][0].parameters())}
    result["speedup"] = round(seconds["torch.nn.Transformer"] / seconds["ours"], 2)
    result["speedup_without_kernels"] = round(seconds["torch.nn.Transformer"] / seconds[PLAIN], 2)
    print(f"training throughput on {len(batches) - 2} Multi30k batches of <= {args.max_tokens} tokens, "
          f"{result['threads']} threads; fp32 matmul peak {peak:.1f} GFLOP/s")
    for name in runs:
        r = result[name]
        print(f"  {name:24s} {r['target_tokens_per_s']:7,d} target tokens/s  {r['gflops']:6.1f} GFLOP/s "
              f"({100 * r['share_of_peak']:.0f}% of peak)  {r['parameters']:,} parameters")
    print(f"  speed-up of ours over the torch.nn.Transformer reference: {result['speedup']:.2f}x (target >= 2x); "
          f"without the speed kernels {result['speedup_without_kernels']:.2f}x")
    if args.bf16:
        result["bf16_over_float32"] = round(seconds["ours"] / seconds[BF16], 2)
        units = sorted(BF16_FLAGS & cpu_flags()) or ["none"]
        result["bf16_units"] = units
        print(f"  bf16 autocast against float32 (ours): {result['bf16_over_float32']:.2f}x target tokens/s "
              f"(the CPU's bf16 units: {', '.join(units)})")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return result
