"""The decoder-only layout: one causal stack over ``source <bos> target`` (the GPT-style family).

The source (ending in eos) and the target (starting with bos, which acts as
the separator) are one sequence; a causal mask lets every position see only
what came before it.  Padding sits between the source and the target of a
short sentence, so positions count real tokens only and padded keys are
masked: a sentence gives the same logits alone or inside a batch.
"""
from typing import Optional

import torch
import torch.nn as nn

from ...config import TransformerConfig
from ..cache import EncoderState, KVCache
from ..model import Dropout, Embeddings, Parts, Tensor
from ..stacks import DecoderOutput, EncoderLayer, causal_mask
from ...registry import LAYOUT


@LAYOUT.register("decoder-only")
class DecoderOnly(nn.Module):
    """``n_decoder_layers`` self-attention + feed-forward blocks, causal, over source and target."""

    label = "decoder-only"
    has_encoder = False
    exports = {
        "ctranslate2": "CTranslate2's TransformerSpec (ctranslate2.Translator) needs an encoder and encoder-decoder "
        "attention, and this exporter writes no language-model package (TransformerDecoderModelSpec for "
        "ctranslate2.Generator) for the decoder-only layout's single causal stack over source and target",
        "marian": "transformers' MarianMTModel needs an encoder and encoder-decoder attention; the decoder-only "
        "layout has neither"}

    @staticmethod
    def check(config: TransformerConfig) -> None:
        if config.n_encoder_layers != 0:
            raise ValueError("the decoder-only layout has no encoder: set n_encoder_layers=0 "
                             "(its single stack has n_decoder_layers layers)")
        if config.src_vocab_size != config.tgt_vocab_size:
            raise ValueError("the decoder-only layout needs one shared vocabulary "
                             f"(src_vocab_size={config.src_vocab_size} != tgt_vocab_size={config.tgt_vocab_size})")

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        parts = Parts(config)
        self.config = config
        self.embed_tokens = Embeddings(config.tgt_vocab_size, config.d_model, config.pad_id)
        self.positional = parts.positional()
        self.dropout = Dropout(config.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(parts.attention(), parts.feed_forward(), [parts.residual() for _ in range(2)])
            for _ in range(config.n_decoder_layers))
        self.final_norm = parts.final_norm()
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size, bias=False)
        if config.share_embeddings:
            self.generator.weight = self.embed_tokens.lut.weight
        else:
            nn.init.normal_(self.generator.weight, mean=0.0, std=config.d_model ** -0.5)

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        """What ``__init__`` builds, counted from the sizes alone (``TransformerConfig.num_parameters``)."""
        c, size = config, Parts(config).sizes()
        embeddings = Embeddings.parameter_count(c.tgt_vocab_size, c.d_model)
        if not c.share_embeddings:  # a pre-softmax matrix of its own
            embeddings += c.d_model * c.tgt_vocab_size
        layers = c.n_decoder_layers * (size["attention"] + size["feed_forward"] + 2 * size["residual"])
        return embeddings + size["positional"] + layers + size["final_norm"]

    def encode(self, src: Tensor, need_weights: bool = False) -> EncoderState:
        """Nothing to compute ahead: the source is read by the same stack in the first ``decode`` call (so there
        are no encoder weights to give)."""
        return EncoderState(src, src != self.config.pad_id)

    def decode(self, tgt: Tensor, state: EncoderState, cache: Optional[KVCache] = None,
               need_weights: bool = False) -> DecoderOutput:
        state = state.ungrouped()  # the source is read per row, as the first tokens of each sequence
        B, S, T = state.src.size(0), state.src.size(1), tgt.size(1)
        past = 0 if cache is None else cache.length
        src_len = state.src_mask.sum(dim=1, keepdim=True)  # (B, 1)
        tgt_pos = src_len + torch.arange(past, past + T, device=tgt.device)[None]  # (B, T)
        if S + past + T > self.config.max_len:
            raise ValueError(f"source + target = {S + past + T} tokens, more than max_len={self.config.max_len}")
        if past == 0:  # read the source and the first target tokens in one pass
            ids = torch.cat([state.src, tgt], dim=1)  # (B, S + T)
            src_pos = (state.src_mask.cumsum(dim=1) - 1).clamp(min=0)  # (B, S); padding reuses a position
            positions = torch.cat([src_pos, tgt_pos], dim=1)
            queries_past = 0
        else:  # the cache holds the source and the target so far
            ids, positions, queries_past = tgt, tgt_pos, S + past
        keys = torch.cat([state.src_mask, state.src_mask.new_ones(B, past + T)], dim=1)  # (B, S + past + T)
        mask = causal_mask(ids.size(1), queries_past, tgt.device) & keys[:, None, None, :]
        rotate = self.positional.rotation(positions)
        x = self.dropout(self.positional(self.embed_tokens(ids), positions))
        weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, mask, rotate, None if cache is None else cache.layers[i]["self"], need_weights)
            if need_weights:  # the target rows' attention over the source, renormalised to sum to 1
                w = w[:, :, -T:, :S]
                weights.append(w / w.sum(dim=-1, keepdim=True).clamp(min=1e-12))
        if cache is not None:
            cache.length += T
        return DecoderOutput(self.final_norm(x[:, -T:]), self.generator, weights if need_weights else None)

    def new_cache(self) -> KVCache:
        return KVCache.empty(len(self.layers))

    def target_budget(self, state: EncoderState) -> int:
        """Source and target share ``max_len`` positions."""
        return self.config.max_len - state.src.size(1)
