"""SentencePiece tokenization: train from text, encode / decode, save beside the model.

Unseen characters: every vocabulary is trained with **byte fallback**, so a
character the training text never had (an emoji, a CJK or Cyrillic letter) is
spelled as its UTF-8 bytes (``<0xF0>`` ...) and decodes back exactly; nothing
maps to ``<unk>`` and nothing crashes.

Control characters (Unicode category Cc): the whitespace ones (tab, newline,
carriage return, ...) become a space and every other one is dropped, before
SentencePiece's own normalisation (NFKC, runs of spaces collapsed, leading and
trailing spaces dropped).  A lone surrogate, which is not valid Unicode, is
dropped too (a surrogate pair becomes its character).  SentencePiece alone
dropped some controls but kept NUL and most C1 controls, and crashed on lone
surrogates.  The special ids are fixed and agree
with ``TransformerConfig``'s defaults: pad 0, bos 1, eos 2, unk 3.

Languages: a multilingual vocabulary holds one *control symbol* per language,
``<2de>`` and so on (ids 4, 5, ...).  A control symbol is never produced from
text (a user typing ``<2de>`` gets ordinary pieces), only inserted by id: the
target-language tag that starts a multilingual model's source.  Domains work the same way: a
``<domain:software>`` control symbol follows the language tag (``source_tags`` builds that start, for training
and decoding alike); ``with_domains`` appends domain tags to a trained vocabulary (a warm start), so the ids of
every existing piece stay what they were.

Subword regularisation (Kudo, 2018): a tokenizer may carry a ``SubwordSampling`` (saved in
``tokenizer_config.json``), the setting its model was *trained* with; ``sample`` then draws a segmentation
of the training text from the unigram model's lattice.  ``encode`` never samples: decoding, validation and
every user of the model see the one most likely segmentation.
"""
from __future__ import annotations

import io
import json
import os
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import sentencepiece as spm

from .config import domain_tag, language_tag

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
CONFIG_FILE = "tokenizer_config.json"
JOINT_FILE, SOURCE_FILE, TARGET_FILE = "spm.model", "source.spm.model", "target.spm.model"
MAX_MODEL_BYTES = 64 * 1024 * 1024


SAMPLING_SIDES = ("source", "both")


@dataclass(frozen=True)
class SubwordSampling:
    """SentencePiece sampling of training text: ``alpha`` smooths the unigram probabilities (smaller: more
    varied segmentations), ``nbest`` -1 samples from every segmentation (else from the n best), ``side``
    ``source`` or ``both`` (source and target)."""

    alpha: float
    side: str = "source"
    nbest: int = -1

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha <= 1:
            raise ValueError(f"subword sampling alpha must be a number in (0, 1], got {self.alpha!r}")
        if self.side not in SAMPLING_SIDES:
            raise ValueError(f"subword sampling side must be one of {', '.join(SAMPLING_SIDES)}, got {self.side!r}")
        if isinstance(self.nbest, bool) or not isinstance(self.nbest, int) or not (self.nbest == -1 or self.nbest > 1):
            raise ValueError(f"subword sampling nbest must be -1 (all segmentations) or above 1, got {self.nbest!r}")

    @property
    def sides(self) -> Tuple[str, ...]:
        return ("source",) if self.side == "source" else ("source", "target")

    def describe(self) -> str:
        return f"alpha {self.alpha:g}, nbest {self.nbest}, {self.side} side{'s' if self.side == 'both' else ''}"

    @classmethod
    def from_dict(cls, data: object) -> "SubwordSampling":
        if not isinstance(data, dict) or set(data) - {"alpha", "side", "nbest"} or "alpha" not in data:
            raise ValueError(f"sampling must be an object with alpha, side and nbest, got {data!r}")
        return cls(**data)


def seed_sampling(seed: int) -> None:
    """Seed SentencePiece's sampling generator: the same seed, then the same calls, give the same samples."""
    spm.set_random_generator_seed(seed)


# Cc characters: whitespace controls -> " ", the others -> removed (str.translate table).
_CONTROLS = {c: (" " if chr(c).isspace() else None) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))}


def clean_text(text: str) -> str:
    """The text the tokenizer sees: lone surrogates dropped, control characters as described above."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "ignore")
    return text.translate(_CONTROLS)


def _train_processor(texts: Iterable[str], vocab_size: int, model_type: str,
                     languages: Sequence[str] = (), domains: Sequence[str] = ()) -> spm.SentencePieceProcessor:
    lines = [line for line in (clean_text(t).strip() for t in texts if t) if line]
    if not lines:
        raise ValueError("cannot train a tokenizer on empty text")
    buffer = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=buffer, vocab_size=vocab_size, model_type=model_type,
            pad_id=PAD_ID, bos_id=BOS_ID, eos_id=EOS_ID, unk_id=UNK_ID, byte_fallback=True,
            character_coverage=1.0, num_threads=2, hard_vocab_limit=False, minloglevel=2,
            train_extremely_large_corpus=False, input_sentence_size=2_000_000, shuffle_input_sentence=True,
            **({"control_symbols": [language_tag(lang) for lang in languages] + [domain_tag(d) for d in domains]}
               if languages or domains else {}),
        )
    except RuntimeError as exc:  # e.g. a vocab_size below 4 specials + 256 bytes + the text's characters
        raise ValueError(f"cannot train a SentencePiece vocabulary of vocab_size={vocab_size} (byte fallback needs "
                         f"4 special + 256 byte pieces + one per distinct character): {exc}") from exc
    return _load_processor(buffer.getvalue(), "trained model")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _with_control_symbols(processor: spm.SentencePieceProcessor, symbols: Sequence[str]) -> spm.SentencePieceProcessor:
    """The same model with ``symbols`` appended as CONTROL pieces (new ids at the end, old ids unchanged).

    A ModelProto's pieces are its repeated field 1; protobuf appends a repeated field's later occurrences, so the
    new pieces are serialised (piece = field 1, score = field 2, type CONTROL = 3 in field 3) after the rest.
    """
    extra = b""
    for symbol in symbols:
        text = symbol.encode("utf-8")
        piece = b"\x0a" + _varint(len(text)) + text + b"\x15" + struct.pack("<f", 0.0) + b"\x18\x03"
        extra += b"\x0a" + _varint(len(piece)) + piece
    return _load_processor(processor.serialized_model_proto() + extra, "extended model")


def _load_processor(proto: bytes, where: str) -> spm.SentencePieceProcessor:
    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(proto)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError on a corrupt proto
        raise ValueError(f"{where} is not a valid SentencePiece model: {exc}") from exc
    if processor.GetPieceSize() == 0:
        raise ValueError(f"{where} is not a valid SentencePiece model: empty vocabulary")
    return processor


class Tokenizer:
    """Source and target SentencePiece models (the same object when the vocabulary is joint)."""

    def __init__(self, source: spm.SentencePieceProcessor, target: Optional[spm.SentencePieceProcessor] = None,
                 sampling: Optional[SubwordSampling] = None):
        self.source = source
        self.target = target if target is not None else source
        self.sampling = sampling  # how the model's training text was segmented; encode() never samples
        for side in (self.source, self.target):
            ids = (side.pad_id(), side.bos_id(), side.eos_id(), side.unk_id())
            if ids != (PAD_ID, BOS_ID, EOS_ID, UNK_ID):
                raise ValueError(f"tokenizer special ids (pad, bos, eos, unk) are {ids}, expected "
                                 f"{(PAD_ID, BOS_ID, EOS_ID, UNK_ID)}")

    @property
    def joint(self) -> bool:
        return self.source is self.target

    @property
    def src_vocab_size(self) -> int:
        return self.source.GetPieceSize()

    @property
    def tgt_vocab_size(self) -> int:
        return self.target.GetPieceSize()

    @classmethod
    def train(cls, source_texts: Iterable[str], target_texts: Optional[Iterable[str]] = None, *,
              vocab_size: int = 8000, joint: bool = True, model_type: str = "unigram",
              languages: Sequence[str] = (), domains: Sequence[str] = ()) -> "Tokenizer":
        """Train a joint vocabulary over both sides (``joint=True``), or one per side.

        ``vocab_size`` is an upper bound: a small corpus yields fewer pieces.  ``languages`` adds a
        target-language tag per language (multilingual models need a joint vocabulary), ``domains`` a domain tag
        per domain.
        """
        source_texts = list(source_texts)
        target_texts = list(target_texts) if target_texts is not None else []
        if joint:
            return cls(_train_processor(source_texts + target_texts, vocab_size, model_type, languages, domains))
        if languages or domains:
            raise ValueError("language and domain tags need a joint vocabulary (joint=True)")
        if not target_texts:
            raise ValueError("separate vocabularies need target texts")
        return cls(_train_processor(source_texts, vocab_size, model_type),
                   _train_processor(target_texts, vocab_size, model_type))

    @property
    def languages(self) -> List[str]:
        """The languages whose tags the source vocabulary holds (empty for a bilingual vocabulary)."""
        found = []
        for i in range(self.source.GetPieceSize()):
            piece = self.source.IdToPiece(i)
            if self.source.IsControl(i) and piece.startswith("<2") and piece.endswith(">"):
                found.append(piece[2:-1])
        return found

    def lang_tag_id(self, lang: str) -> int:
        """The id of the ``<2lang>`` tag; ``ValueError`` if the vocabulary has none."""
        tag = language_tag(lang)
        index = self.source.PieceToId(tag)
        if index == self.source.unk_id() or self.source.IdToPiece(index) != tag:
            raise ValueError(f"the tokenizer has no tag {tag}: its languages are {self.languages or 'none'}")
        return index

    @property
    def domains(self) -> List[str]:
        """The domains whose tags the source vocabulary holds, in id order."""
        return [self.source.IdToPiece(i)[len("<domain:"):-1] for i in range(self.source.GetPieceSize())
                if self.source.IsControl(i) and self.source.IdToPiece(i).startswith("<domain:")]

    def domain_tag_id(self, domain: str) -> int:
        """The id of the ``<domain:name>`` tag; ``ValueError`` if the vocabulary has none."""
        tag = domain_tag(domain)
        index = self.source.PieceToId(tag)
        if index == self.source.unk_id() or self.source.IdToPiece(index) != tag:
            raise ValueError(f"the tokenizer has no tag {tag}: its domains are {self.domains or 'none'}")
        return index

    def with_domains(self, domains: Sequence[str]) -> "Tokenizer":
        """This vocabulary with a tag for each of ``domains`` it lacks, appended (a joint vocabulary only)."""
        if not self.joint:
            raise ValueError("domain tags need a joint vocabulary")
        missing = [d for d in domains if d not in self.domains]
        if not missing:
            return self
        return Tokenizer(_with_control_symbols(self.source, [domain_tag(d) for d in missing]), sampling=self.sampling)

    # ------------------------------------------------------------------ encode / decode
    def encode(self, text: str, side: str = "source") -> List[int]:
        """Text -> piece ids (no bos/eos added)."""
        if not isinstance(text, str):
            raise TypeError(f"expected a string, got {type(text).__name__}")
        return self._side(side).EncodeAsIds(clean_text(text))

    def sample(self, text: str, side: str = "source") -> List[int]:
        """Training text -> piece ids drawn by ``sampling`` when it covers ``side``, else ``encode``'s.

        Deterministic given ``seed_sampling``'s seed and the sequence of calls (one thread)."""
        if self.sampling is None or side not in self.sampling.sides:
            return self.encode(text, side)
        if not isinstance(text, str):
            raise TypeError(f"expected a string, got {type(text).__name__}")
        return self._side(side).Encode(clean_text(text), enable_sampling=True, alpha=self.sampling.alpha,
                                       nbest_size=self.sampling.nbest)

    def segmentations(self, text: str, n: int, side: str = "target") -> List[List[int]]:
        """The ``n`` most likely segmentations of ``text`` (a unigram model's n-best; none for other models)."""
        try:
            return [list(ids) for ids in self._side(side).NBestEncodeAsIds(clean_text(text), n)]
        except RuntimeError:  # BPE models have no n-best segmentation
            return []

    def decode(self, ids: List[int], side: str = "target") -> str:
        """Piece ids -> text; special ids (pad, bos, eos) are dropped."""
        processor = self._side(side)
        size = processor.GetPieceSize()
        clean = [int(i) for i in ids if int(i) not in (PAD_ID, BOS_ID, EOS_ID) and 0 <= int(i) < size]
        return processor.DecodeIds(clean)

    def pieces(self, ids: List[int], side: str = "target") -> List[str]:
        """Readable piece strings for ids (for attention plots)."""
        return [self._side(side).IdToPiece(int(i)) for i in ids]

    def _side(self, side: str) -> spm.SentencePieceProcessor:
        if side not in ("source", "target"):
            raise ValueError(f"side must be 'source' or 'target', got {side!r}")
        return self.source if side == "source" else self.target

    # ------------------------------------------------------------------ files
    def save(self, directory: Union[str, Path]) -> List[str]:
        """Write the model file(s) and ``tokenizer_config.json``; returns the file names."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        files = {"source": JOINT_FILE, "target": JOINT_FILE} if self.joint else \
            {"source": SOURCE_FILE, "target": TARGET_FILE}
        for side, name in files.items():
            (directory / name).write_bytes(self._side(side).serialized_model_proto())
        config = {"type": "sentencepiece", **files}
        if self.sampling is not None:
            config["sampling"] = asdict(self.sampling)
        (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
        return sorted(set(files.values())) + [CONFIG_FILE]

    @staticmethod
    def _read_config(config_path: Union[str, Path]) -> object:
        try:
            return json.loads(Path(config_path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read tokenizer config {config_path}: {exc}") from exc

    @classmethod
    def sampling_from_config(cls, config_path: Union[str, Path]) -> Optional[SubwordSampling]:
        """The ``sampling`` entry of ``tokenizer_config.json`` (None when absent), checked."""
        data = cls._read_config(config_path)
        if not isinstance(data, dict) or data.get("sampling") is None:
            return None
        try:
            return SubwordSampling.from_dict(data["sampling"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tokenizer config {config_path}: {exc}") from exc

    @classmethod
    def files_from_config(cls, config_path: Union[str, Path]) -> dict:
        """Read ``tokenizer_config.json``: {'source': filename, 'target': filename}, names checked to be plain."""
        data = cls._read_config(config_path)
        files = {}
        for side in ("source", "target"):
            name = data.get(side) if isinstance(data, dict) else None
            if not isinstance(name, str) or not name or os.path.basename(name) != name or name.startswith("."):
                raise ValueError(f"tokenizer config {config_path}: {side!r} must be a plain file name, got {name!r}")
            files[side] = name
        return files

    @classmethod
    def from_files(cls, source_path: Union[str, Path], target_path: Optional[Union[str, Path]] = None) -> "Tokenizer":
        """Load from model files (one joint file, or a source and a target file)."""
        def read(path: Union[str, Path]) -> spm.SentencePieceProcessor:
            path = Path(path)
            if path.stat().st_size > MAX_MODEL_BYTES:
                raise ValueError(f"{path} is larger than {MAX_MODEL_BYTES} bytes; refusing to load it")
            return _load_processor(path.read_bytes(), str(path))

        source = read(source_path)
        if target_path is None or Path(target_path) == Path(source_path):
            return cls(source)
        return cls(source, read(target_path))

    @classmethod
    def from_directory(cls, directory: Union[str, Path]) -> "Tokenizer":
        directory = Path(directory)
        files = cls.files_from_config(directory / CONFIG_FILE)
        tokenizer = cls.from_files(directory / files["source"], directory / files["target"])
        tokenizer.sampling = cls.sampling_from_config(directory / CONFIG_FILE)
        return tokenizer


def source_tags(tokenizer: Tokenizer, config, tgt_lang: Optional[str], domain: Optional[str] = None) -> List[int]:
    """The ids a source starts with, the same in training and decoding: the target-language tag of a
    multilingual model, then the domain tag of a model trained with domains (``config.check_domain`` fills in
    and checks ``domain``).  A model with decoder-start tags gets its language tag moved there by the decoder."""
    tags = [tokenizer.lang_tag_id(tgt_lang)] if config.multilingual else []
    domain = config.check_domain(domain) if hasattr(config, "check_domain") else None
    return tags + ([tokenizer.domain_tag_id(domain)] if domain is not None else [])
