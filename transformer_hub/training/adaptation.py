"""The adaptation behind ``python -m transformer_hub adapt`` (``adapt.py``): its options, its data and model, the
loop and the scores.

The project's pairs (``user_data.py``: .po, TMX, TSV, parallel files, a suggestions export) are split into a
seeded training part and a held-out part that is never trained on.  The model learns a new domain tag named
after the project (appended to its vocabulary, so no old id moves: ``warm_start.add_domains``), and every
epoch mixes the project's pairs with a replay share drawn from the base model's own corpora under their own
tags (mixed fine-tuning, Chu et al., 2017), so that the base domains do not drift.  Training stops when the
minutes are spent (or at ``max_updates``); the held-out BLEU is measured every ``eval_every`` updates.  Before
and after, the held-out pairs and each replayed domain's val are scored; ``adapt_report.py`` writes the folder.
"""
from __future__ import annotations

import logging
import math
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch
from tqdm.auto import tqdm

from ..config import DOMAIN_NAME
from ..errors import UserError
from ..transformer import Transformer
from .data import Example, Track, iterate_batches, load_split, parse_data_dirs
from .evaluation import loss_sum, translation_scores
from .run import encode
from .schedule import lr_factor, scheduled_lr
from .user_data import Pair, UserData, hold_out, read_user_data
from .warm_start import add_domains, load_init

logger = logging.getLogger("transformer_hub.training.adapt")
GENERAL = "general"  # the base domain of a model trained without domain tags


@dataclass
class AdaptConfig:
    """The options of one adaptation; every field but the first three has the command's default."""

    base: str                                   # the saved model to start from (folder or Hub repo id)
    data: List[str]                             # the project's files
    out: str                                    # the save_pretrained folder to write
    minutes: float = 30.0                       # the training's wall-time budget, evaluations included
    domain: Optional[str] = None                # the project's domain tag (default: from the out folder's name)
    src_lang: Optional[str] = None              # when the files do not say
    tgt_lang: Optional[str] = None
    replay_data: List[str] = field(default_factory=list)  # [NAME=]DIR corpora of the base model (Multi30k layout)
    replay_share: float = 0.5                   # replayed pairs' share of each epoch's examples
    holdout: float = 0.2                        # the project's share held out to score
    seed: int = 1
    max_updates: int = 0                        # 0: until the minutes are spent
    eval_every: int = 100                       # updates between held-out evaluations
    max_tokens: int = 4096
    peak_lr: float = 5e-4
    warmup: int = 100
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    val_limit: int = 300                        # pairs of each replayed domain's val that are scored
    beam: int = 1                               # beam of the before/after scores (1: greedy)
    threads: int = 0                            # 0: torch's choice

    def __post_init__(self) -> None:
        """Refuse a bad value in one line, before any data is read."""
        if not self.data:
            raise ValueError("give the project's translations with --data FILE")
        for name, low, high in (("minutes", 0.0, math.inf), ("holdout", 0.0, 1.0), ("peak_lr", 0.0, math.inf),
                                ("clip_norm", 0.0, math.inf)):
            if not low < getattr(self, name) < high:
                raise ValueError(f"--{name.replace('_', '-')} must be > {low:g} and < {high:g}, got {getattr(self, name)}")
        for name in ("replay_share", "label_smoothing"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 0 and < 1, got {getattr(self, name)}")
        for name, low in (("seed", 0), ("max_updates", 0), ("eval_every", 1), ("max_tokens", 1), ("warmup", 1),
                          ("val_limit", 1), ("beam", 1), ("threads", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"--{name.replace('_', '-')} must be an integer >= {low}, got {value!r}")

    def project_domain(self) -> str:
        """``domain``, else the out folder's name made a domain name ("My-Project" -> "my_project")."""
        name = self.domain or re.sub(r"[^a-z0-9_]+", "_", Path(self.out).resolve().name.lower()).strip("_")[:32]
        if not DOMAIN_NAME.match(name):
            raise UserError(f"{name!r} is not a domain name (a lowercase letter, then letters, digits or _): "
                            "give --domain NAME")
        return name


@dataclass
class Adaptation:
    """What the loop works on: the model as loaded, the model learning the project's tag, the pairs."""

    config: AdaptConfig
    base: Transformer
    model: Transformer
    domain: str
    user: UserData
    train: List[Pair]
    held: List[Pair]
    replay: Dict[str, Tuple[List[Pair], List[Pair]]]  # base domain -> (train pairs, val pairs)
    replay_sources: Dict[str, str] = field(default_factory=dict)  # base domain -> its folder

    @property
    def direction(self) -> Tuple[str, str]:
        return self.user.src_lang, self.user.tgt_lang

    def examples(self, model: Transformer, pairs: List[Pair], domain: Optional[str]) -> List[Example]:
        """``pairs`` as ``model``'s examples, each source starting with the tags of ``source_tags`` (the
        training's and decoding's one rule) for the target language and ``domain``."""
        budget = model.config.max_len if model.config.layout != "decoder-only" else model.config.max_len // 2
        return encode({Track(*self.direction, domain or ""): pairs}, model.tokenizer, model.config, budget)


def prepare(config: AdaptConfig) -> Adaptation:
    """The project's data read and split, the base model loaded, the model to train grown by the project's tag."""
    user = read_user_data(config.data, config.src_lang, config.tgt_lang)
    train, held = hold_out(user.pairs, config.holdout, config.seed)
    base = load_init(config.base)
    try:
        base.config.check_pair(user.src_lang, user.tgt_lang)
    except ValueError as exc:
        raise UserError(f"--from {config.base}: {exc}") from None
    if not base.tokenizer.joint:
        raise UserError(f"--from {config.base}: its vocabulary is not joint, and a domain tag needs one")
    replay, sources = read_replay(config, base, user.src_lang, user.tgt_lang)
    domain = config.project_domain()
    base_domains = list(base.config.domains or []) or list(replay)[:1] or [GENERAL]
    tok, grown, weights = add_domains(base.tokenizer, base.config, base.state_dict(), base_domains + [domain])
    torch.manual_seed(config.seed)
    model = Transformer(grown)
    model.load_state_dict(weights, strict=True)
    model.tokenizer = tok
    return Adaptation(config, base, model, domain, user, train, held, replay, sources)


def read_replay(config: AdaptConfig, base: Transformer, src: str, tgt: str
                ) -> Tuple[Dict[str, Tuple[List[Pair], List[Pair]]], Dict[str, str]]:
    """``--replay-data [NAME=]DIR``: each base domain's train and val pairs in the project's direction (a folder
    without a name is the base model's first domain)."""
    known = list(base.config.domains or [])
    if not known and len(config.replay_data) > 1:
        raise UserError("--replay-data: a model trained without domain tags replays one corpus")
    replay, folders = {}, {}
    for source in parse_data_dirs(config.replay_data):
        name = source.domain or (known[0] if known else GENERAL)
        if known and name not in known:
            raise UserError(f"--replay-data {name}={source.path}: the model's domains are {', '.join(known)}: name "
                            "each folder by the domain it replays")
        replay[name] = (load_split(source.path, "train", src, tgt),
                        load_split(source.path, "val", src, tgt)[:config.val_limit])
        folders[name] = str(source.path)
    return replay, folders


def epoch_examples(a: Adaptation, epoch: int, project: List[Example]) -> List[Example]:
    """The project's examples and this epoch's replay draw (seeded by seed and epoch), the replayed pairs
    ``replay_share`` of the whole, shared equally by the replayed domains."""
    c = a.config
    if not a.replay or c.replay_share == 0:
        return project
    wanted = round(len(project) * c.replay_share / (1 - c.replay_share)) // len(a.replay)
    rng = random.Random(c.seed * 1_000_003 + epoch)
    drawn = list(project)
    for name, (pairs, _) in a.replay.items():
        drawn += a.examples(a.model, rng.sample(pairs, min(wanted, len(pairs))), name)
    return drawn


def measure(a: Adaptation, model: Transformer, held_domains: List[Optional[str]]) -> Dict[str, Dict]:
    """BLEU, chrF and loss of ``model`` on the held-out pairs (in the best of ``held_domains``) and on each
    replayed domain's val (in that domain)."""
    options = {"strategy": "beam", "beam_size": a.config.beam} if a.config.beam > 1 else {}
    table = {"held_out": max((scores_in(a, model, a.held, d, options) for d in held_domains),
                             key=lambda s: s["bleu"])}
    for name, (_, val) in a.replay.items():
        table[f"val/{name}"] = scores_in(a, model, val, name if model.config.domains else None, options)
    return table


def scores_in(a: Adaptation, model: Transformer, pairs: List[Pair], domain: Optional[str], options: Dict) -> Dict:
    """``model``'s scores on ``pairs`` read in ``domain``, the mean cross-entropy per target token among them."""
    found: Dict = dict(translation_scores(model, pairs, *a.direction, domain, **options))
    total, count = loss_sum(model, a.examples(model, pairs, domain), a.config.max_tokens)
    found["loss"] = total / max(count, 1)
    if domain:
        found["domain"] = domain
    return found


def fine_tune(a: Adaptation) -> Dict:
    """Train until the minutes are spent (or ``max_updates``); the held-out curve and how the run ended."""
    c, model = a.config, a.model
    d_model = model.config.d_model
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    factor = lr_factor(c.peak_lr, d_model, c.warmup)
    project = a.examples(model, a.train, a.domain)
    step, epoch, skipped, stopped, start = 0, 0, 0, "", time.perf_counter()
    curve: List[Dict] = []
    bar = tqdm(total=c.max_updates or None, desc=f"adapt {a.domain}", unit="update", dynamic_ncols=True)
    while not stopped:
        first = step
        for _, (src, tgt_in, tgt_out) in iterate_batches(epoch_examples(a, epoch, project), c.max_tokens,
                                                        c.seed, epoch, model.config.pad_id):
            model.train()
            for group in optimizer.param_groups:
                group["lr"] = scheduled_lr(step + 1, d_model, c.warmup, factor)
            loss = model(src, tgt_in, tgt_out, c.label_smoothing)
            if torch.isfinite(loss):
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip_norm)
                optimizer.step()
            else:  # a bad batch is dropped, not learned from
                skipped += 1
            optimizer.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            if step % c.eval_every == 0:
                curve.append(held_point(a, step, time.perf_counter() - start))
                bar.set_postfix(loss=f"{loss.item():.3f}", held_out_bleu=f"{curve[-1]['bleu']:.2f}")
            stopped = ("minutes" if time.perf_counter() - start >= c.minutes * 60 else
                       "max_updates" if c.max_updates and step >= c.max_updates else "")
            if stopped:
                break
        if step == first:
            raise UserError(f"no training pair fits the model's {model.config.max_len} tokens: nothing to learn")
        epoch += 1
    bar.close()
    seconds = time.perf_counter() - start
    if not curve or curve[-1]["step"] != step:
        curve.append(held_point(a, step, seconds))
    return {"updates": step, "epochs": epoch, "stopped_by": stopped, "train_minutes": round(seconds / 60, 2),
            "skipped_batches": skipped, "curve": curve}


def held_point(a: Adaptation, step: int, seconds: float) -> Dict:
    """The held-out scores (greedy) of the model being trained, at update ``step``."""
    point = {"step": step, "seconds": round(seconds, 1), **scores_in(a, a.model, a.held, a.domain, {})}
    point.pop("domain", None)
    return point

