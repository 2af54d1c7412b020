"""The encoder and decoder stacks of section 3.1 and the full model, built from the parts of ``model.py``.

``EncoderDecoder`` is the paper's layout (registered as ``encoder-decoder``); ``BaseTransformer`` builds the
layout a config names and checks what it is given.  Shapes as in ``model.py``.
"""
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, Optional

import torch
import torch.nn as nn

from ..config import TransformerConfig
from ..registry import LAYOUT
from .cache import EncoderState, KVCache
from .losses import SmoothedLoss
from .model import Dropout, Embeddings, Parts, Rotate, Tensor


# --------------------------------------------------------------------------- 3.1 Encoder and decoder stacks
class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward; each wrapped in a residual connection with layer norm."""

    def __init__(self, self_attn: nn.Module, feed_forward: nn.Module, residuals: List[nn.Module]) -> None:
        super().__init__()
        self.self_attn, self.feed_forward = self_attn, feed_forward
        self.residuals = nn.ModuleList(residuals)

    def forward(self, x: Tensor, mask: Tensor, rotate: Optional[Rotate] = None,
                cache: Optional[Dict[str, Tensor]] = None, need_weights: bool = False):
        seen: Dict[str, Optional[Tensor]] = {}

        def attend(h: Tensor) -> Tensor:
            out, seen["weights"] = self.self_attn(h, mask=mask, rotate=rotate, cache=cache, need_weights=need_weights)
            return out

        x = self.residuals[0](x, attend)
        return self.residuals[1](x, self.feed_forward), seen["weights"]


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, feed-forward (section 3.1, "Decoder")."""

    def __init__(self, self_attn: nn.Module, cross_attn: nn.Module, feed_forward: nn.Module,
                 residuals: List[nn.Module]) -> None:
        super().__init__()
        self.self_attn, self.cross_attn, self.feed_forward = self_attn, cross_attn, feed_forward
        self.residuals = nn.ModuleList(residuals)

    def forward(self, x: Tensor, memory: Tensor, self_mask: Optional[Tensor], cross_mask: Optional[Tensor],
                cache: Optional[Dict] = None, rotate: Optional[Rotate] = None,
                need_weights: bool = False):
        """-> (x, self-attention weights, cross-attention weights); the weights are None unless asked for."""
        seen: Dict[str, Optional[Tensor]] = {}

        def attend(h: Tensor) -> Tensor:
            out, seen["self"] = self.self_attn(h, mask=self_mask, rotate=rotate,
                                               cache=None if cache is None else cache["self"], need_weights=need_weights)
            return out

        def cross(h: Tensor) -> Tensor:
            out, seen["cross"] = self.cross_attn(h, memory, cross_mask, None if cache is None else cache["cross"],
                                                 need_weights=need_weights)
            return out

        x = self.residuals[0](x, attend)
        x = self.residuals[1](x, cross)
        return self.residuals[2](x, self.feed_forward), seen["self"], seen["cross"]


@dataclass
class DecoderOutput:
    """The decoder's last hidden states; ``logits`` applies the pre-softmax linear map when first read."""

    hidden: Tensor  # (B, T, d_model), after the final norm
    generator: nn.Module  # (B, T, d_model) -> (B, T, tgt_vocab)
    cross_attention: Optional[List[Tensor]] = None  # per layer (B, h, T, S) when asked for
    self_attention: Optional[List[Tensor]] = None  # per layer (B, h, T, past + T) when asked for

    @cached_property
    def logits(self) -> Tensor:  # (B, T, tgt_vocab)
        return self.generator(self.hidden)


def causal_mask(t_new: int, past: int, device: torch.device) -> Tensor:
    """(1, 1, t_new, past + t_new): position i may attend to keys 0..past+i (the decoder's masking)."""
    keys = torch.arange(past + t_new, device=device)
    return (keys[None, :] <= (torch.arange(t_new, device=device) + past)[:, None])[None, None]


@LAYOUT.register("encoder-decoder")
class EncoderDecoder(nn.Module):
    """The paper's model: N encoder layers over the source, N decoder layers over the target."""

    label = "encoder-decoder"
    has_encoder = True
    exports = {"ctranslate2": {}, "marian": {}}

    @staticmethod
    def check(config: TransformerConfig) -> None:
        if config.n_encoder_layers < 1:
            raise ValueError("the encoder-decoder layout needs n_encoder_layers >= 1")

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        parts = Parts(config)
        self.config = config
        self.src_embed = Embeddings(config.src_vocab_size, config.d_model, config.pad_id)
        self.tgt_embed = (self.src_embed if config.share_embeddings
                          else Embeddings(config.tgt_vocab_size, config.d_model, config.pad_id))
        self.positional = parts.positional()
        self.dropout = Dropout(config.dropout)
        self.encoder = nn.ModuleList(
            EncoderLayer(parts.attention(), parts.feed_forward(), [parts.residual() for _ in range(2)])
            for _ in range(config.n_encoder_layers))
        self.encoder_norm = parts.final_norm()
        self.decoder = nn.ModuleList(
            DecoderLayer(parts.attention(), parts.attention(), parts.feed_forward(),
                         [parts.residual() for _ in range(3)])
            for _ in range(config.n_decoder_layers))
        self.decoder_norm = parts.final_norm()
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size, bias=False)  # pre-softmax
        if config.share_embeddings:
            self.generator.weight = self.tgt_embed.lut.weight
        else:
            nn.init.normal_(self.generator.weight, mean=0.0, std=config.d_model ** -0.5)

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        """What ``__init__`` builds, counted from the sizes alone (``TransformerConfig.num_parameters``)."""
        c, size = config, Parts(config).sizes()
        embeddings = Embeddings.parameter_count(c.src_vocab_size, c.d_model)
        if not c.share_embeddings:  # a target table and the pre-softmax matrix of their own
            embeddings += Embeddings.parameter_count(c.tgt_vocab_size, c.d_model) + c.d_model * c.tgt_vocab_size
        encoder = c.n_encoder_layers * (size["attention"] + size["feed_forward"] + 2 * size["residual"])
        decoder = c.n_decoder_layers * (2 * size["attention"] + size["feed_forward"] + 3 * size["residual"])
        return embeddings + size["positional"] + encoder + decoder + 2 * size["final_norm"]

    def embed(self, embeddings: Embeddings, ids: Tensor, positions: Tensor) -> Tensor:
        return self.dropout(self.positional(embeddings(ids), positions))  # (B, T, d_model)

    def encode(self, src: Tensor, need_weights: bool = False) -> EncoderState:
        src_mask = src != self.config.pad_id  # (B, S)
        positions = torch.arange(src.size(1), device=src.device)[None]  # (1, S)
        rotate = self.positional.rotation(positions)  # None unless positions rotate queries/keys
        x = self.embed(self.src_embed, src, positions)
        state = EncoderState(src, src_mask)
        weights = []
        for layer in self.encoder:
            x, w = layer(x, state.key_mask, rotate, need_weights=need_weights)  # mask (B, 1, 1, S) or None
            weights.append(w)
        state.memory = self.encoder_norm(x)
        state.self_attention = weights if need_weights else None
        return state

    def decode(self, tgt: Tensor, state: EncoderState, cache: Optional[KVCache] = None,
               need_weights: bool = False) -> DecoderOutput:
        past = 0 if cache is None else cache.length
        positions = torch.arange(past, past + tgt.size(1), device=tgt.device)[None]  # (1, T)
        rotate = self.positional.rotation(positions)
        x = self.embed(self.tgt_embed, tgt, positions)
        # (1, 1, T, past + T); one new token may see every cached one, so it needs no mask at all
        self_mask = causal_mask(tgt.size(1), past, tgt.device) if tgt.size(1) > 1 else None
        cross_mask = state.key_mask  # (B, 1, 1, S), or None without padding
        self_weights, cross_weights = [], []
        for i, layer in enumerate(self.decoder):
            x, w_self, w_cross = layer(x, state.memory, self_mask, cross_mask,
                                       None if cache is None else cache.layers[i], rotate, need_weights)
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        if cache is not None:
            cache.length += tgt.size(1)
        if not need_weights:
            return DecoderOutput(self.decoder_norm(x), self.generator)
        return DecoderOutput(self.decoder_norm(x), self.generator, cross_weights, self_weights)

    def new_cache(self) -> KVCache:
        return KVCache.empty(len(self.decoder))

    def target_budget(self, state: EncoderState) -> int:
        """How many target positions fit: ``max_len`` for every sentence."""
        return self.config.max_len


# --------------------------------------------------------------------------- The model
class BaseTransformer(nn.Module):
    """The network: ``model(src, tgt_in) -> logits``, plus ``encode`` / ``decode`` for decoding.

    ``BaseTransformer(config)`` builds the layout the config names and checks what it is given.  The public
    class, ``transformer_hub.Transformer``, adds the Hub (save/load/card) and ``translate`` on top of it:
    this package stays below decoding and the Hub, which take the model they are handed.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        if isinstance(config, dict):
            config = TransformerConfig.from_dict(config)
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config = config
        self.body = LAYOUT.get(config.layout)(config)
        self.loss = SmoothedLoss()  # section 5.4; kernels.use_speed_kernels swaps in the fused one

    def _check_length(self, ids: Tensor, what: str) -> None:
        if ids.dim() != 2:
            raise ValueError(f"{what} must be a (batch, length) tensor of token ids, got shape {tuple(ids.shape)}")
        if ids.size(1) > self.config.max_len:
            raise ValueError(f"{what} has {ids.size(1)} tokens, more than max_len={self.config.max_len}")

    def encode(self, src: Tensor, need_weights: bool = False) -> EncoderState:
        """(B, S) source ids -> the state ``decode`` attends to (with ``need_weights``, its
        ``self_attention``: the encoder's weights per layer)."""
        self._check_length(src, "source")
        return self.body.encode(src, need_weights)

    def decode(self, tgt: Tensor, state: EncoderState, cache: Optional[KVCache] = None,
               need_weights: bool = False) -> DecoderOutput:
        """(B, T) target ids (only the new ones when ``cache`` holds the rest) -> logits (B, T, V); with
        ``need_weights``, the output's ``self_attention`` and ``cross_attention`` hold the weights per layer."""
        self._check_length(tgt, "target")
        if tgt.size(0) != state.rows:
            raise ValueError(f"target has {tgt.size(0)} rows, the encoder state serves {state.rows}")
        if cache is not None and cache.length + tgt.size(1) > self.config.max_len:
            raise ValueError(f"decoding past max_len={self.config.max_len}")
        return self.body.decode(tgt, state, cache, need_weights)

    def new_cache(self) -> KVCache:
        """An empty key/value cache for incremental decoding."""
        return self.body.new_cache()

    def target_budget(self, state: EncoderState) -> int:
        """The most target tokens (bos included) ``decode`` accepts for this encoded batch."""
        return self.body.target_budget(state)

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Optional[Tensor] = None,
                label_smoothing: float = 0.0) -> Tensor:
        """Teacher forcing: (B, S), (B, T) -> logits (B, T, tgt_vocab).

        With ``tgt_out`` (B, T) it returns the label-smoothed cross-entropy (section 5.4) of ``self.loss``,
        averaged over non-padding targets.
        """
        out = self.decode(tgt_in, self.encode(src))
        if tgt_out is None:
            return out.logits
        return self.loss(out, tgt_out, self.config.pad_id, label_smoothing)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # shared tensors are counted once
