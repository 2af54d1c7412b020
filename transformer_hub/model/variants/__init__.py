"""The alternatives to the paper's parts, each a small registered class.

Importing this package registers them: learned and rotary positions, pre-norm,
GELU and SwiGLU feed-forward blocks, the ``sdpa`` attention kernel and the
decoder-only layout.
"""
from . import attention, decoder_only, feed_forward, norm, positional  # noqa: F401
