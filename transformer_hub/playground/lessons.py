"""The four lessons of the playground (A/B pairs on the same seed and data) and what each switch means."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

from .run import RunConfig


@dataclass(frozen=True)
class Lesson:
    """Two runs that differ in one idea of the paper, and what to look for."""

    name: str
    title: str
    a: RunConfig
    b: RunConfig
    a_label: str
    b_label: str
    expect: str

    @property
    def short(self) -> str:
        """The title's first words ("Positions"), short enough for a dropdown on a phone."""
        return self.title.split(":")[0]


LESSONS: Dict[str, Lesson] = {lesson.name: lesson for lesson in (
    Lesson("positions", "Positions: attention has no sense of order", RunConfig(task="reverse"),
           RunConfig(task="reverse", positions="none"), "sinusoidal positions", "no positions",
           "With positions the model learns to reverse; without them the encoder sees a bag of digits and "
           "free-running exact match stays near zero, however long it trains."),
    Lesson("causal-mask", "The causal mask: the decoder must not read the word it predicts",
           RunConfig(task="reverse"), RunConfig(task="reverse", causal_mask=False), "causal mask on",
           "causal mask off",
           "Without the mask, teacher-forced accuracy reaches 100% at once (the answer is the next input); "
           "greedy decoding, which has no next input, gets almost nothing right."),
    Lesson("heads", "Heads: several attention patterns at the same size", RunConfig(task="sort", n_heads=4),
           RunConfig(task="sort", n_heads=1), "4 heads", "1 head",
           "Sorting needs each output to look at many digits at once (count the smaller ones); one head of "
           "the full width has one pattern per layer, four heads have four."),
    Lesson("warm-up", "Warm-up: a high learning rate needs a gentle start",
           RunConfig(task="reverse", peak_lr=0.01), RunConfig(task="reverse", peak_lr=0.01, warmup=False),
           "warm-up (100 steps)", "no warm-up",
           "Both peak at the same learning rate; without warm-up, Adam's first large steps, taken while its "
           "statistics are still poor, can derail a post-norm model."),
)}

SWITCH_NOTES: Dict[str, str] = {
    "positions": "Section 3.5: self-attention is blind to order, so the paper adds sinusoids to the embeddings "
                 "(learned vectors did as well, Table 3 row E; rotary rotates queries and keys). With none, "
                 "copy still works by content, but reverse and sort cannot be learned.",
    "causal_mask": "Section 3.2.3: the decoder's self-attention is masked so position i sees only outputs "
                   "before it. Off, training reads the answer from the next input: teacher-forced accuracy "
                   "is perfect while greedy decoding fails.",
    "n_heads": "Section 3.2.2: h heads of size d_model/h cost what one full-size head costs but attend to h "
               "places at once; Table 3 row A found one head 0.9 BLEU worse. Expect fewer heads to learn slower.",
    "norm": "Section 3.1 normalises after each residual sum (post-norm); pre-norm normalises each sub-layer's "
            "input, which trains stably even without warm-up (Xiong et al., 2020).",
    "residual": "Section 3.1: every sub-layer is wrapped in x + Sublayer(x). Without the skip connection "
                "each layer must carry all the information itself; deeper stacks learn much slower.",
    "warmup": "Section 5.3: the learning rate rises linearly for the warm-up steps, then decays as 1/sqrt(step). "
              "Off: the same peak from step 1. Expect a rough or failed start at high learning rates.",
    "label_smoothing": "Section 5.4: targets of 0.9 on the right token and 0.1 spread over the rest. It 'hurts "
                       "perplexity, as the model learns to be more unsure': the loss cannot go below about 0.69 "
                       "here, while accuracy is unaffected.",
}
