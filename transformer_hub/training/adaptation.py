"""The adaptation behind ``python -m transformer_hub adapt`` (``adapt.py`` runs the loop): its options, its data
and model, each epoch's examples and the scores.

The project's pairs (``user_data.py``: .po, TMX, TSV, parallel files, a suggestions export) come in one or more
directions (``de.po``, ``fr.po``: en-de and en-fr); per direction they are split into a seeded training part and a
held-out part that is never trained on, by source sentence and the same in every direction.  The model learns
a new domain tag named after the project (appended to its vocabulary, so no old id moves:
``warm_start.add_domains``), and every epoch mixes each direction's pairs with a replay share drawn from the base
model's own corpora in that direction, under their own tags (mixed fine-tuning, Chu et al., 2017), so that the
base domains do not drift.  Every pair is shown to the model as serving shows it: its placeholders and markup
masked (``text.placeholders.mask_pair``), and the scores translate as serving does (masked, decoded, unmasked).
Before and after, per direction, the held-out pairs and each replayed domain's val are scored;
``adapt_report.py`` writes the folder.
"""
from __future__ import annotations

import logging
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch

from ..config import DOMAIN_NAME
from ..errors import UserError
from ..text.pipeline import translate_texts
from ..text.placeholders import mask_pair
from ..transformer import Transformer
from .data import Example, Track, load_split, parse_data_dirs
from .evaluation import loss_sum
from .metrics import score
from .run import encode
from .user_data import Pair, UserData, UserFile, hold_out_directions, read_directions
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
    replay_share: float = 0.5                   # replayed pairs' share of each direction's examples in an epoch
    holdout: float = 0.2                        # the project's share held out to score
    seed: int = 1
    max_updates: int = 0                        # 0: until the minutes are spent
    eval_every: int = 100                       # updates between held-out evaluations
    eval_limit: int = 0                         # held-out pairs per direction those evaluations score (0: all)
    max_tokens: int = 4096
    peak_lr: float = 2.5e-4                     # chosen with pilots: a lower rate drifts less per held-out gain
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
                          ("val_limit", 1), ("beam", 1), ("threads", 0), ("eval_limit", 0)):
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


Replay = Dict[str, Tuple[List[Pair], List[Pair]]]  # base domain -> (train pairs, val pairs), in one direction


@dataclass
class Direction:
    """One direction of the project: its files, its training and held-out pairs, and what is replayed in it."""

    user: UserData
    train: List[Pair]
    held: List[Pair]
    replay: Replay

    @property
    def src_lang(self) -> str:
        return self.user.src_lang

    @property
    def tgt_lang(self) -> str:
        return self.user.tgt_lang

    @property
    def name(self) -> str:
        return self.user.name

    def curve_pairs(self, limit: int) -> List[Pair]:
        """The held-out pairs the curve scores: all of them (``limit`` 0 or as many), else ``limit`` of them
        evenly spaced through the project's files."""
        if not limit or limit >= len(self.held):
            return self.held
        return [self.held[k * len(self.held) // limit] for k in range(limit)]


@dataclass
class Adaptation:
    """What the loop works on: the model as loaded, the model learning the project's tag, each direction's pairs."""

    config: AdaptConfig
    base: Transformer
    model: Transformer
    domain: str
    directions: List[Direction]
    replay_sources: Dict[str, List[str]] = field(default_factory=dict)  # base domain -> its folders

    @property
    def files(self) -> List[UserFile]:
        return [f for d in self.directions for f in d.user.files]

    @property
    def replayed(self) -> List[str]:
        """The base domains replayed (in every direction)."""
        return list(self.replay_sources)

    def examples(self, model: Transformer, pairs: List[Pair], domain: Optional[str],
                 direction: Direction) -> List[Example]:
        """``pairs`` of ``direction`` as ``model``'s examples, masked as serving masks them (``mask_pair``), each
        source starting with the tags of ``source_tags`` (the training's and decoding's one rule) for the target
        language and ``domain``."""
        budget = model.config.max_len if model.config.layout != "decoder-only" else model.config.max_len // 2
        masked = [mask_pair(s, t) for s, t in pairs]
        track = Track(direction.src_lang, direction.tgt_lang, domain or "")
        return encode({track: masked}, model.tokenizer, model.config, budget)


def prepare(config: AdaptConfig) -> Adaptation:
    """The project's data read and split per direction, the base model loaded, the model to train grown by the
    project's tag."""
    found = read_directions(config.data, config.src_lang, config.tgt_lang)
    splits = hold_out_directions([user.pairs for user in found], config.holdout, config.seed,
                                 [user.name for user in found])
    base = load_init(config.base)
    for user in found:
        try:
            base.config.check_pair(user.src_lang, user.tgt_lang)
        except ValueError as exc:
            raise UserError(f"--from {config.base}: {exc}") from None
    if not base.tokenizer.joint:
        raise UserError(f"--from {config.base}: its vocabulary is not joint, and a domain tag needs one")
    replay, sources = read_replay(config, base, [(user.src_lang, user.tgt_lang) for user in found])
    directions = [Direction(user, train, held, replay[k]) for k, (user, (train, held)) in enumerate(zip(found, splits))]
    domain = config.project_domain()
    base_domains = list(base.config.domains or []) or list(sources)[:1] or [GENERAL]
    tok, grown, weights = add_domains(base.tokenizer, base.config, base.state_dict(), base_domains + [domain])
    torch.manual_seed(config.seed)
    model = Transformer(grown)
    model.load_state_dict(weights, strict=True)
    model.tokenizer = tok
    return Adaptation(config, base, model, domain, directions, sources)


def read_replay(config: AdaptConfig, base: Transformer, pairs: List[Tuple[str, str]]
                ) -> Tuple[List[Replay], Dict[str, List[str]]]:
    """``--replay-data [NAME=]DIR``: per direction of ``pairs``, each base domain's train and val pairs in it (a
    folder without a name is the base model's first domain; folders of one name are one corpus, as in training,
    each giving up to ``val_limit`` val pairs)."""
    known = list(base.config.domains or [])
    if not known and len(config.replay_data) > 1:
        raise UserError("--replay-data: a model trained without domain tags replays one corpus")
    replay: List[Replay] = [{} for _ in pairs]
    folders: Dict[str, List[str]] = {}
    for source in parse_data_dirs(config.replay_data):
        name = source.domain or (known[0] if known else GENERAL)
        if known and name not in known:
            raise UserError(f"--replay-data {name}={source.path}: the model's domains are {', '.join(known)}: name "
                            "each folder by the domain it replays")
        for found, (src, tgt) in zip(replay, pairs):
            train, val = found.get(name, ([], []))
            found[name] = (train + load_split(source.path, "train", src, tgt),
                           val + load_split(source.path, "val", src, tgt)[:config.val_limit])
        folders.setdefault(name, []).append(str(source.path))
    return replay, folders


def epoch_examples(a: Adaptation, epoch: int, project: Dict[str, List[Example]]) -> List[Example]:
    """Each direction's project examples (``project``: by direction name) and this epoch's replay draw in that
    direction (seeded by seed and epoch): the replayed pairs ``replay_share`` of the direction's examples, shared
    equally by the replayed domains."""
    c = a.config
    rng = random.Random(c.seed * 1_000_003 + epoch)
    drawn: List[Example] = []
    for d in a.directions:
        drawn += project[d.name]
        if not d.replay or c.replay_share == 0:
            continue
        wanted = round(len(project[d.name]) * c.replay_share / (1 - c.replay_share)) // len(d.replay)
        for name, (pairs, _) in d.replay.items():
            drawn += a.examples(a.model, rng.sample(pairs, min(wanted, len(pairs))), name, d)
    return drawn


Scores = Dict[str, Dict[str, Dict]]  # direction -> "held_out" or "val/NAME" -> BLEU, chrF, loss ...


def measure(a: Adaptation, model: Transformer, held_domains: List[Optional[str]]) -> Scores:
    """Per direction: BLEU, chrF and loss of ``model`` on the held-out pairs (in the best of ``held_domains``) and
    on each replayed domain's val (in that domain)."""
    options = {"strategy": "beam", "beam_size": a.config.beam} if a.config.beam > 1 else {}
    table: Scores = {}
    for d in a.directions:
        table[d.name] = {"held_out": max((scores_in(a, d, model, d.held, domain, options) for domain in held_domains),
                                         key=lambda s: s["bleu"])}
        for name, (_, val) in d.replay.items():
            table[d.name][f"val/{name}"] = scores_in(a, d, model, val, name if model.config.domains else None,
                                                     options)
    return table


def scores_in(a: Adaptation, d: Direction, model: Transformer, pairs: List[Pair], domain: Optional[str],
              options: Dict) -> Dict:
    """``model``'s scores on ``pairs`` of ``d`` read in ``domain`` (``served_scores``), the mean cross-entropy per
    target token among them."""
    found: Dict = dict(served_scores(model, pairs, d.src_lang, d.tgt_lang, domain, **options))
    total, count = loss_sum(model, a.examples(model, pairs, domain, d), a.config.max_tokens)
    found["loss"] = total / max(count, 1)
    if domain:
        found["domain"] = domain
    return found


def served_scores(model: Transformer, pairs: List[Pair], src_lang: str, tgt_lang: str, domain: Optional[str],
                  **options) -> Dict[str, float]:
    """sacreBLEU / chrF of ``model``'s translations of ``pairs`` made as serving makes them (``translate_texts``,
    each source one sentence: its placeholders masked, decoded in ``domain``, unmasked; greedy unless
    ``options`` say otherwise)."""
    languages = {"src_lang": src_lang, "tgt_lang": tgt_lang} if model.config.pairs() else {}
    results = translate_texts(model, [p[0] for p in pairs], split_sentences=False, batch_size=200,
                              domain=domain if model.config.domains else None, **languages, **options)
    return score([r.text for r in results], [p[1] for p in pairs])
