"""Inside the Transformer: what the paper describes, read off a trained model for one sentence.

    from transformer_hub.inside import attention_maps
    maps = attention_maps(model, "A dog runs.", src_lang="en", tgt_lang="de")
    maps.encoder_self.shape, maps.decoder_self.shape, maps.cross.shape   # (L, h, S, S), (L, h, T, T), (L, h, T, S)

* ``attention_maps``: the three kinds of attention (sections 3.2.3) of every layer and head, from one
  teacher-forced forward pass through the model's own attention modules;
* ``positional_encoding``: what the model's positional module puts into the embeddings (section 3.5) or,
  for rotary positions, what it does to a query-key score as their distance grows;
* ``step_by_step`` and ``teacher_forcing``: the decoder's choices one step at a time (greedy's top-k and the
  beams beam search keeps), and teacher forcing against free running on a sentence with a reference;
* ``training_recipe`` and ``smoothed_target``: the learning-rate schedule (section 5.3) with the model's
  own d_model and warm-up next to its logged curves, and the label-smoothed target (section 5.4).
"""
from .attention import AttentionMaps, attention_maps
from .positions import PositionalView, positional_encoding
from .recipe import RecipeView, SmoothedTarget, smoothed_target, training_recipe
from .steps import ForcingView, StepView, step_by_step, teacher_forcing

__all__ = ["AttentionMaps", "attention_maps", "PositionalView", "positional_encoding", "RecipeView",
           "SmoothedTarget", "smoothed_target", "training_recipe", "ForcingView", "StepView", "step_by_step",
           "teacher_forcing"]
