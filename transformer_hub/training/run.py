"""The training run's setup: its data, tokenizer, config, model, optimizer and training examples.

``Trainer`` (``train.py``) inherits these steps; they read ``self.args`` and set the attributes the loop uses
(``train_sets``/``valid_sets``, ``config``, ``model``, ``net``, ``optimizer``, ``state``, the examples).
A new run trains its tokenizer and builds its config from the options; ``--init-from`` takes both and the
weights from a saved model (``warm_start.py``); ``--resume`` restores the newest checkpoint.  Subword
sampling re-segments the training examples every epoch from a seed fixed by (seed, epoch).
"""
from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from . import checkpoint as ckpt
from ..config import TransformerConfig
from .data import encode_pairs, load_directions, parse_directions, read_parallel
from ..errors import UserError
from ..hub import CONFIG_JSON, read_config
from ..transformer import Transformer
from ..tokenizer import SubwordSampling, Tokenizer, seed_sampling
from .warm_start import load_init, run_config, weights_digest

logger = logging.getLogger("transformer_hub.training.trainer")


class RunSetup:
    """The setup half of ``Trainer``."""

    # ---------------------------------------------------------------- setup
    def _load_data(self) -> None:
        """``train_sets`` / ``valid_sets``: {(src_lang, tgt_lang): pairs}, one entry unless multilingual."""
        a = self.args
        self.langs = [lang.strip() for lang in a.langs.split(",")] if a.langs else None
        if self.langs and (a.train_src or a.train_tgt):
            raise UserError("--langs reads {split}.{lang} files from --data-dir; --train-src/--train-tgt are for one pair")
        if a.train_src or a.train_tgt:
            if not (a.train_src and a.train_tgt and a.valid_src and a.valid_tgt):
                raise UserError("--train-src/--train-tgt need --valid-src/--valid-tgt too")
            pair = (a.src_lang, a.tgt_lang)
            self.train_sets = {pair: read_parallel(a.train_src, a.train_tgt)}
            self.valid_sets = {pair: read_parallel(a.valid_src, a.valid_tgt)}
        else:
            directions = parse_directions(self.langs, a.directions) if self.langs else [(a.src_lang, a.tgt_lang)]
            self.train_sets = load_directions(a.data_dir, a.train_split, directions)
            self.valid_sets = load_directions(a.data_dir, a.valid_split, directions)
        for sets, limit in ((self.train_sets, a.limit), (self.valid_sets, a.valid_limit)):
            for pair in sets:
                sets[pair] = sets[pair][:limit] if limit else sets[pair]
        first = next(iter(self.train_sets))
        self.train_pairs, self.valid_pairs = self.train_sets[first], self.valid_sets[first]

    def _tokenizer_texts(self) -> List[str]:
        """Every training sentence once per language (a four-way corpus repeats them per direction)."""
        by_lang: Dict[str, List[str]] = {}
        for (src_lang, tgt_lang), pairs in self.train_sets.items():
            by_lang.setdefault(src_lang, [p[0] for p in pairs])
            by_lang.setdefault(tgt_lang, [p[1] for p in pairs])
        return [text for texts in by_lang.values() for text in texts]

    def _tokenizer(self) -> Tokenizer:
        folder = self.out / "tokenizer"
        if self.main and not (folder / "tokenizer_config.json").is_file():
            if self.langs:
                if self.args.separate_vocab:
                    raise UserError("--langs needs a joint vocabulary: drop --separate-vocab")
                tok = Tokenizer.train(self._tokenizer_texts(), vocab_size=self.args.vocab_size or 10000, languages=self.langs)
            else:
                tok = Tokenizer.train([s for s, _ in self.train_pairs], [t for _, t in self.train_pairs],
                                      vocab_size=self.args.vocab_size or 10000, joint=not self.args.separate_vocab)
            tok.save(folder)
        if self.world > 1:
            dist.barrier()
        return Tokenizer.from_directory(folder)

    def _build_model(self) -> None:
        a = self.args
        found = ckpt.list_checkpoints(self.out / "checkpoints") if a.resume else []
        weights = None
        if a.init_from:
            tok, self.config, weights = self._init_from(found)
        else:
            tok = self._tokenizer()
            self.config = self._new_config(tok)
        self._set_sampling(tok, resuming=bool(found))
        torch.manual_seed(a.seed)
        random.seed(a.seed)
        self.model = Transformer(self.config).to(self.device)
        if weights is not None:
            self.model.load_state_dict(weights, strict=True)
        self.model.tokenizer = tok
        self.net = self.model
        if self.world > 1:
            self.net = torch.nn.parallel.DistributedDataParallel(self.model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
        c = self.config
        self.budget = c.max_len if c.layout != "decoder-only" else c.max_len // 2
        self.train_examples = self._encode(self.train_sets, tok)
        self.valid_examples = self._encode(self.valid_sets, tok)
        self._sampled: Tuple[int, List] = (-1, [])
        self.state: Dict = {"step": 0, "epoch": 0, "batch": 0, "train_seconds": 0.0, "wall_seconds": 0.0, "best_bleu": None,
                            "tokens": 0, "args": {k: v for k, v in vars(a).items()}}
        if a.init_from:
            self.state["init"] = self.init_record
        if found:
            self.state = ckpt.load_checkpoint(found[-1], self.model, self.optimizer)
            if self.main:
                self.metrics.truncate_after(self.state["step"])
                logger.info("resumed from %s (step %d)", found[-1], self.state["step"])

    def _new_config(self, tok: Tokenizer) -> TransformerConfig:
        a = self.args
        overrides = {k: getattr(a, k) for k in ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers",
                                                "dropout", "max_len", "positional", "norm", "feed_forward",
                                                "attention", "layout", "tag_position") if getattr(a, k) is not None}
        share = not a.no_share_embeddings and tok.joint
        if overrides.get("layout") == "decoder-only":
            overrides.setdefault("n_encoder_layers", 0)
        if self.langs:
            everything = a.directions is None
            languages = {"languages": self.langs, "src_lang": None, "tgt_lang": None,
                         "directions": None if everything else [f"{s}-{t}" for s, t in self.train_sets]}
        else:
            languages = {"src_lang": a.src_lang, "tgt_lang": a.tgt_lang}
        try:
            return TransformerConfig.preset(a.preset or "cpu", **{**overrides, "src_vocab_size": tok.src_vocab_size,
                                                                  "tgt_vocab_size": tok.tgt_vocab_size,
                                                                  "share_embeddings": share, **languages})
        except ValueError as exc:  # options that make no model together, e.g. --tag-position decoder without --langs
            raise UserError(f"these model options make no valid config: {exc}") from exc

    def _init_from(self, found: List[Path]) -> Tuple[Tokenizer, TransformerConfig, Optional[Dict]]:
        """--init-from: the saved model's tokenizer, config and weights (a resumed run: its own checkpoint's)."""
        a, folder = self.args, self.out / "tokenizer"
        if found:  # the checkpoint holds the weights; the config and tokenizer are this run's copies
            config, weights = read_config(str(found[-1] / CONFIG_JSON)), None
            self.init_record = {}
        else:
            init = load_init(a.init_from)
            config, weights = init.config, init.state_dict()
            self.init_record = {"source": a.init_from, "sha256": weights_digest(a.init_from)}
            if self.main:
                init.tokenizer.save(folder)
            if self.world > 1:
                dist.barrier()
        tok = Tokenizer.from_directory(folder)
        return tok, run_config(a, config, tok, list(self.train_sets)), weights

    def _encode(self, sets, tok: Tokenizer, sample: bool = False) -> List:
        c, examples, cache = self.config, [], {}
        for (src_lang, tgt_lang), pairs in sets.items():
            tag = tok.lang_tag_id(tgt_lang) if c.multilingual else None
            examples += encode_pairs(pairs, tok, c.bos_id, c.eos_id, self.budget, tag, f"{src_lang}-{tgt_lang}",
                                     cache, sample=sample, tag_in_decoder=c.decoder_tags)
        return examples

    def _set_sampling(self, tok: Tokenizer, resuming: bool) -> None:
        """The run's subword sampling, kept in its tokenizer copy (so in every checkpoint and the final model)."""
        a = self.args
        try:
            wanted = SubwordSampling(a.subword_sampling_alpha, a.subword_sampling_side) if a.subword_sampling_alpha \
                else None
        except ValueError as exc:
            raise UserError(f"--subword-sampling-alpha/--subword-sampling-side: {exc}") from exc
        if tok.sampling == wanted:
            return
        if resuming:
            said = tok.sampling.describe() if tok.sampling else "none"
            raise UserError(f"this run was trained with subword sampling {said}: resume it with the same "
                            f"--subword-sampling-* options (they say {wanted.describe() if wanted else 'none'})")
        tok.sampling = wanted
        if self.main:
            tok.save(self.out / "tokenizer")

    def epoch_examples(self, epoch: int) -> List:
        """The training examples of ``epoch``: re-segmented each epoch under subword sampling, drawn from a seed
        fixed by (seed, epoch) so that a resumed run sees the same pieces; else always the same."""
        if self.model.tokenizer.sampling is None:
            return self.train_examples
        if self._sampled[0] != epoch:
            seed_sampling((self.args.seed * 1_000_003 + epoch) % 2 ** 32)
            self._sampled = (epoch, self._encode(self.train_sets, self.model.tokenizer, sample=True))
        return self._sampled[1]
