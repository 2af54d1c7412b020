"""Every name the playground takes from the rest of the library, imported in this one place.

Modules of the library may move; the playground reads them only through here.
"""
from ..config import TransformerConfig
from ..decoding import decode_ids
from ..model import PositionalEncoding, Tensor, scaled_dot_product_attention
from ..model.losses import label_smoothed_cross_entropy
from ..registry import NORM, POSITIONAL
from ..training.schedule import lr_factor, noam_lr
from ..transformer import Transformer

__all__ = ["NORM", "POSITIONAL", "TransformerConfig", "Transformer", "PositionalEncoding", "Tensor",
           "scaled_dot_product_attention", "decode_ids", "label_smoothed_cross_entropy", "lr_factor", "noam_lr"]
