"""The training run: what ``build_run`` makes from the options before the first update, as one typed ``Run``.

A new run trains its tokenizer and builds its config from the options; ``--init-from`` takes both and the
weights from a saved model (``warm_start.py``); ``--resume`` restores the newest checkpoint.  Subword
sampling re-segments the training examples every epoch from a seed fixed by (seed, epoch).
"""
from __future__ import annotations

import dataclasses
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from ..config import TransformerConfig
from ..errors import UserError
from ..hub import CONFIG_JSON, read_config
from ..model.kernels import use_speed_kernels
from ..registry import LAYOUT
from ..tokenizer import SubwordSampling, Tokenizer, seed_sampling, source_tags
from ..transformer import Transformer
from . import checkpoint as ckpt
from .config import TrainingConfig
from .data import (DataSource, Example, Track, default_data_dir, encode_pairs, load_mixed, parse_data_dirs,
                   parse_directions, read_parallel)
from .metrics import MetricsLog
from .vocabulary import balanced, row_sources, transplant, transplant_summary
from .warm_start import add_domains, check_init_source, load_init, run_config, weights_digest

logger = logging.getLogger("transformer_hub.training")
Pair = Tuple[str, str]
Sets = Dict[Track, List[Tuple[str, str]]]  # (src_lang, tgt_lang, corpus) -> sentence pairs


@dataclass(frozen=True)
class Place:
    """Where a run works: its folder, its device, and this process's rank among ``world`` of them."""

    out: Path
    device: torch.device
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()


@dataclass
class Run:
    """Everything the training loop works on: data, tokenizer (``model.tokenizer``), config, model, optimizer,
    encoded examples and the state a checkpoint saves."""

    langs: Optional[List[str]]  # --langs: a multilingual run over these; None for one pair
    train_sets: Sets
    valid_sets: Sets
    config: TransformerConfig
    model: Transformer
    net: torch.nn.Module  # the model, or its DistributedDataParallel wrapper
    optimizer: torch.optim.Optimizer
    budget: int  # tokens per example the model takes (a decoder-only model reads source and target in one)
    train_examples: List[Example]
    valid_examples: List[Example]
    state: ckpt.RunState  # what a checkpoint keeps (training_state.json)
    seed: int
    _sampled: Tuple[int, List[Example]] = field(default=(-1, []), repr=False)

    @property
    def valid_pairs(self) -> List[Tuple[str, str]]:
        """The first direction's validation pairs (the only one unless multilingual)."""
        return self.valid_sets[next(iter(self.valid_sets))]

    def epoch_examples(self, epoch: int) -> List[Example]:
        """The training examples of ``epoch``: re-segmented each epoch under subword sampling, drawn from a seed
        fixed by (seed, epoch) so that a resumed run sees the same pieces; else always the same."""
        if self.model.tokenizer.sampling is None:
            return self.train_examples
        if self._sampled[0] != epoch:
            seed_sampling((self.seed * 1_000_003 + epoch) % 2 ** 32)
            self._sampled = (epoch, encode(self.train_sets, self.model.tokenizer, self.config, self.budget,
                                           sample=True))
        return self._sampled[1]


def build_run(options: TrainingConfig, place: Place, metrics: MetricsLog) -> Run:
    """The run the options describe: a new one, one warm-started from ``--init-from``, or a resumed one."""
    langs = [lang.strip() for lang in options.langs.split(",")] if options.langs else None
    found = ckpt.list_checkpoints(place.out / "checkpoints") if options.resume else []
    if options.init_from and not found:  # a mistyped folder is said before the corpus is read
        check_init_source(options.init_from)
    train_sets, valid_sets = load_data(options, langs)
    weights, init_record = None, None
    directions = list(dict.fromkeys((track.src, track.tgt) for track in train_sets))
    if options.init_from:
        tok, config, weights, init_record = init_from(options, place, found, directions, train_sets)
    else:
        tok = train_tokenizer(options, place, langs, train_sets)
        config = new_config(options, tok, langs, directions)
    set_sampling(options, place, tok, resuming=bool(found))
    torch.manual_seed(options.seed)
    random.seed(options.seed)
    model = Transformer(config).to(place.device)
    if options.speed_kernels:
        use_speed_kernels(model)
    if weights is not None:
        model.load_state_dict(weights, strict=True)
    model.tokenizer = tok
    net = torch.nn.parallel.DistributedDataParallel(model) if place.world > 1 else model
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    # per side: without an encoder, source and target share the one stack's positions
    budget = config.max_len if LAYOUT.about(config.layout, "has_encoder") else config.max_len // 2
    state = ckpt.RunState(options=options.to_dict(), init=init_record)
    if found:
        state = ckpt.load_checkpoint(found[-1], model, optimizer)
        if place.main:
            metrics.truncate_after(state.step)
            logger.info("resumed from %s (step %d)", found[-1], state.step)
    return Run(langs, train_sets, valid_sets, config, model, net, optimizer, budget,
               encode(train_sets, tok, config, budget), encode(valid_sets, tok, config, budget), state, options.seed)


def load_data(options: TrainingConfig, langs: Optional[List[str]]) -> Tuple[Sets, Sets]:
    """The training and validation sets: {(src_lang, tgt_lang): pairs}, one entry unless multilingual."""
    a = options
    if langs and (a.train_src or a.train_tgt):
        raise UserError("--langs reads {split}.{lang} files from --data-dir; --train-src/--train-tgt are for one pair")
    if a.train_src or a.train_tgt:
        if not (a.train_src and a.train_tgt and a.valid_src and a.valid_tgt):
            raise UserError("--train-src/--train-tgt need --valid-src/--valid-tgt too")
        pair = Track(a.src_lang, a.tgt_lang)
        train_sets = {pair: read_parallel(a.train_src, a.train_tgt)}
        valid_sets = {pair: read_parallel(a.valid_src, a.valid_tgt)}
    else:
        directions = parse_directions(langs, a.directions) if langs else [(a.src_lang, a.tgt_lang)]
        train_sets = load_mixed(data_sources(a), a.train_split, directions)
        valid_sets = load_mixed(data_sources(a), a.valid_split, directions)
    for sets, limit in ((train_sets, a.limit), (valid_sets, a.valid_limit)):
        for pair in sets:
            sets[pair] = sets[pair][:limit] if limit else sets[pair]
    for name, times in upsampling(a, train_sets).items():
        for track in [t for t in train_sets if t.domain == name]:
            train_sets[track] = train_sets[track] * times
    return train_sets, valid_sets


def upsampling(options: TrainingConfig, train_sets: Sets) -> Dict[str, int]:
    """--upsample NAME=N: {corpus name: N}; a name no corpus has, or N not a whole number >= 1, is refused."""
    found: Dict[str, int] = {}
    names = sorted({track.domain for track in train_sets if track.domain})
    for value in options.upsample or []:
        name, _, times = value.partition("=")
        if name not in names or not times.isdigit() or int(times) < 1:
            raise UserError(f"--upsample {value}: give NAME=N, N a whole number >= 1 and NAME one of the "
                            f"--data-dir names ({', '.join(names) or 'none: name the folders NAME=PATH'})")
        found[name] = int(times)
    return found


def data_sources(options: TrainingConfig) -> List[DataSource]:
    """The ``--data-dir`` corpora (default: the Multi30k folder)."""
    return parse_data_dirs(options.data_dir or [str(default_data_dir())])


def run_domains(options: TrainingConfig) -> Optional[List[str]]:
    """The domain tags a run trains with: its corpora's names under ``--domain-tags``, else none."""
    if not options.domain_tags:
        return None
    if options.train_src:
        raise UserError("--domain-tags names each corpus by its --data-dir NAME=PATH; --train-src has none")
    names = [source.domain for source in data_sources(options)]
    if not all(names):
        raise UserError("--domain-tags needs named corpora: --data-dir captions=PATH [--data-dir software=PATH]")
    return list(dict.fromkeys(names))  # folders of one name are one corpus, one tag


def tokenizer_texts(train_sets: Sets, per_corpus: int = 0, seed: int = 0) -> List[str]:
    """Every training sentence once per language and corpus (a four-way corpus repeats them per direction);
    ``per_corpus`` > 0: at most that many distinct lines of each (``vocabulary.balanced``)."""
    by_lang: Dict[Tuple[str, str], List[str]] = {}
    for track, pairs in train_sets.items():
        by_lang.setdefault((track.src, track.domain), [p[0] for p in pairs])
        by_lang.setdefault((track.tgt, track.domain), [p[1] for p in pairs])
    if per_corpus:
        return balanced(by_lang, per_corpus, seed)
    return [text for texts in by_lang.values() for text in texts]


def train_tokenizer(options: TrainingConfig, place: Place, langs: Optional[List[str]], train_sets: Sets) -> Tokenizer:
    """The run's tokenizer: trained once (rank 0) into ``out/tokenizer``, read back by every rank."""
    folder = place.out / "tokenizer"
    if place.main and not (folder / "tokenizer_config.json").is_file():
        vocab_size = options.vocab_size or 10000
        if langs:
            if options.separate_vocab:
                raise UserError("--langs needs a joint vocabulary: drop --separate-vocab")
            tok = Tokenizer.train(tokenizer_texts(train_sets, options.tokenizer_lines, options.seed),
                                  vocab_size=vocab_size, languages=langs, domains=run_domains(options) or ())
        else:
            pairs = [pair for pairs in train_sets.values() for pair in pairs]
            tok = Tokenizer.train([s for s, _ in pairs], [t for _, t in pairs], vocab_size=vocab_size,
                                  joint=not options.separate_vocab, domains=run_domains(options) or ())
        tok.save(folder)
    place.barrier()
    return Tokenizer.from_directory(folder)


def new_config(options: TrainingConfig, tok: Tokenizer, langs: Optional[List[str]],
               directions: List[Pair]) -> TransformerConfig:
    """The config of a new run: the preset, the options that override it, the tokenizer's sizes, the languages."""
    a = options
    overrides = {k: getattr(a, k) for k in ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers",
                                            "dropout", "max_len", "positional", "norm", "feed_forward",
                                            "attention", "layout", "tag_position") if getattr(a, k) is not None}
    share = not a.no_share_embeddings and tok.joint
    if overrides.get("layout") == "decoder-only":
        overrides.setdefault("n_encoder_layers", 0)
    if langs:
        everything = a.directions is None
        languages = {"languages": langs, "src_lang": None, "tgt_lang": None,
                     "directions": None if everything else [f"{s}-{t}" for s, t in directions]}
    else:
        languages = {"src_lang": a.src_lang, "tgt_lang": a.tgt_lang}
    try:
        return TransformerConfig.preset(a.preset or "cpu", **{**overrides, "src_vocab_size": tok.src_vocab_size,
                                                              "tgt_vocab_size": tok.tgt_vocab_size,
                                                              "share_embeddings": share, **languages,
                                                              "domains": run_domains(a)})
    except ValueError as exc:  # options that make no model together, e.g. --tag-position decoder without --langs
        raise UserError(f"these model options make no valid config: {exc}") from exc


def init_from(options: TrainingConfig, place: Place, found: List[Path], directions: List[Pair], train_sets: Sets
              ) -> Tuple[Tokenizer, TransformerConfig, Optional[Dict], Dict[str, str]]:
    """--init-from: the saved model's tokenizer, config, weights and where they came from (a resumed run: its
    own checkpoint's weights, and no new record)."""
    folder = place.out / "tokenizer"
    if found:  # the checkpoint holds the weights; the config and tokenizer are this run's copies
        config, weights, record = read_config(str(found[-1] / CONFIG_JSON)), None, {}
    else:
        init = load_init(options.init_from)
        config, weights = init.config, init.state_dict()
        record = {"source": options.init_from, "sha256": weights_digest(options.init_from)}
        tok = init.tokenizer
        domains = run_domains(options)
        if options.new_vocabulary:
            config, weights = new_vocabulary(options, place, train_sets, tok, config, weights)
        elif domains and config.domains is None:  # a warm start that learns domain tags: new pieces, new rows
            tok, config, weights = add_domains(tok, config, weights, domains)
        if place.main and not options.new_vocabulary:
            tok.save(folder)
        place.barrier()
    tok = Tokenizer.from_directory(folder)
    checked = options.replace(vocab_size=None) if options.new_vocabulary else options  # the size is the new one's
    return tok, run_config(checked, config, tok, directions, run_domains(options)), weights, record


def new_vocabulary(options: TrainingConfig, place: Place, train_sets: Sets, old: Tokenizer,
                   config: TransformerConfig, weights: Dict) -> Tuple[TransformerConfig, Dict]:
    """--new-vocabulary: a joint tokenizer trained on this run's corpora (rank 0, into ``out/tokenizer``) and the
    saved model's config and weights moved onto it (``vocabulary.transplant``)."""
    folder, domains = place.out / "tokenizer", run_domains(options) or config.domains or ()
    if not old.joint or not config.share_embeddings:
        raise UserError("--new-vocabulary moves one joint vocabulary onto another: the model's is not joint")
    if place.main:
        Tokenizer.train(tokenizer_texts(train_sets, options.tokenizer_lines, options.seed),
                        vocab_size=options.vocab_size or old.tgt_vocab_size, languages=config.languages or (),
                        domains=domains).save(folder)
    place.barrier()
    new = Tokenizer.from_directory(folder)
    sources = row_sources(old, new)  # each piece's spelling in the old vocabulary, made once for both
    logger.info("new vocabulary: %s", transplant_summary(old, new, sources))
    config = dataclasses.replace(config, src_vocab_size=new.src_vocab_size, tgt_vocab_size=new.tgt_vocab_size,
                                 domains=list(domains) or None)
    return config, transplant(weights, old, new, sources)


def encode(sets: Sets, tok: Tokenizer, config: TransformerConfig, budget: int, sample: bool = False) -> List[Example]:
    """Every pair of ``sets`` as token ids (with the target's language tag when multilingual)."""
    examples: List[Example] = []
    cache: Dict = {}
    for track, pairs in sets.items():
        tags = source_tags(tok, config, track.tgt, (track.domain or None) if config.domains else None)
        examples += encode_pairs(pairs, tok, config.bos_id, config.eos_id, budget, tags, track.name,
                                 cache, sample=sample, tag_in_decoder=config.decoder_tags)
    return examples


def set_sampling(options: TrainingConfig, place: Place, tok: Tokenizer, resuming: bool) -> None:
    """The run's subword sampling, kept in its tokenizer copy (so in every checkpoint and the final model)."""
    try:
        wanted = SubwordSampling(options.subword_sampling_alpha, options.subword_sampling_side) \
            if options.subword_sampling_alpha else None
    except ValueError as exc:
        raise UserError(f"--subword-sampling-alpha/--subword-sampling-side: {exc}") from exc
    if tok.sampling == wanted:
        return
    if resuming:
        said = tok.sampling.describe() if tok.sampling else "none"
        raise UserError(f"this run was trained with subword sampling {said}: resume it with the same "
                        f"--subword-sampling-* options (they say {wanted.describe() if wanted else 'none'})")
    tok.sampling = wanted
    if place.main:
        tok.save(place.out / "tokenizer")
