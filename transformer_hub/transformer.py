"""``Transformer``: the network of ``model/`` with what users call on it, saving/loading like a Hub model
and ``translate``.  It sits above ``model/``, ``hub/`` and ``decoding/``, which take the model they are given.
"""
from typing import Dict, List, Optional, Sequence

from .config import TransformerConfig
from .hub import HubMixin
from .model import BaseTransformer
from .registry import MODELS
from .text.pipeline import generate_texts


@MODELS.register("transformer")  # how a DecodingPool's workers find the class to load
class Transformer(
    BaseTransformer,
    HubMixin,
    library_name="transformer_hub",
    pipeline_tag="translation",
    license="apache-2.0",
    paper_url="https://arxiv.org/abs/1706.03762",
    tags=["translation", "transformer", "attention-is-all-you-need", "from-scratch", "multi30k"],
):
    """The full model: an ``nn.Module`` (``model/``) and a ``hub.HubMixin`` (huggingface_hub's
    ``PyTorchModelHubMixin`` with strict loading), so ``save_pretrained``, ``from_pretrained`` and
    ``push_to_hub`` store it as safetensors with its tokenizer and a model card; ``translate`` calls
    ``decoding.generate``, or the text pipeline where the options ask for it.
    """

    def __init__(self, config: TransformerConfig) -> None:  # annotated: the mixin rebuilds config.json with it
        super().__init__(config)
        self.tokenizer = None  # a transformer_hub.tokenizer.Tokenizer once attached
        self.card_data: Dict = {}  # results and training facts for the model card (hub/)
        self.domain_data: Optional[Dict] = None  # domains.json: the domain classifier (text/domain.py), if any

    def translate(self, texts: Sequence[str], strategy: str = "greedy", **options) -> List[str]:
        """The best output string for each text (``text.generate_texts``: ``generate``'s options, or the pipeline's)."""
        return [r.text for r in generate_texts(self, texts, strategy=strategy, **options)]

