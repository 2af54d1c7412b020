"""The model card: written from a model's config and ``card_data``, read back into ``card_data``."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..config import TransformerConfig

CARD_FILE, PLOT_FILE = "README.md", "training_curves.png"


def model_card(model, has_plot: bool = False, weights_dtype: Optional[str] = None) -> ModelCard:
    """A model card with YAML metadata (languages, datasets, metrics, model-index results).

    ``weights_dtype``: how ``model.safetensors`` stores the weights (default: the model's ``weights_dtype``); a
    card of weights stored in anything but float32 says so, and that they load as float32.
    """
    weights_dtype = weights_dtype or getattr(model, "weights_dtype", "float32")
    cfg: TransformerConfig = model.config
    info = model.card_data
    languages = list(cfg.languages or [lang for lang in (cfg.src_lang, cfg.tgt_lang) if lang])
    results = info.get("results", [])
    data = card_metadata(model, languages, results)
    pair = ", ".join(languages) if cfg.multilingual else f"{cfg.src_lang or 'source'} → {cfg.tgt_lang or 'target'}"
    title = info.get("name", "transformer_hub model")
    lines = [
        "---", data.to_yaml(), "---", "",
        f"# {title}" + ("" if f"({pair})" in title or f"({pair};" in title else f" ({pair})"), "",
        "A Transformer (Vaswani et al., 2017, [Attention Is All You Need](https://arxiv.org/abs/1706.03762)) "
        "written from scratch with transformer_hub.", "",
        "## Use", "", "```python", "from transformer_hub import Transformer", "",
        'model = Transformer.from_pretrained("<this repo or folder>")',
        usage_example(cfg), "```", "",
    ]
    if weights_dtype != "float32":  # the file's precision is not the computation's: say both
        lines += [f"The weights are stored in {weights_dtype} (`model.safetensors`) and loaded as float32: the model "
                  "computes in float32.", ""]
    if info.get("provenance"):  # how the folder was made: the command, and anything done to it afterwards
        lines += ["## How this folder was made", "", info["provenance"], ""]
    if info.get("quality"):  # the quality mode: the reranker tuned beside the weights (rerank.json)
        lines += ["## Quality mode", "", info["quality"], ""]
    if info.get("data"):  # the corpora it was trained on, each with its domain tag and its licence
        lines += ["## Data", "", "| corpus | domain | licence | source |", "| --- | --- | --- | --- |"]
        lines += [f"| {c.get('corpus', '')} | {c.get('domain', '')} | {c.get('licence', '')} | {c.get('source', '')} |"
                  for c in info["data"]] + [""]
    if info.get("tokenizer"):  # how finely the vocabulary cuts each domain's words
        lines += tokenizer_table(info["tokenizer"])
    lines += architecture_table(model)
    if results:
        lines += ["", "## Results", ""] + results_table(results, pair)
    if info.get("training"):
        lines += ["", "## Training", "", "| setting | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in info["training"].items()]
    if has_plot:
        lines += ["", f"![training curves]({PLOT_FILE})"]
    return ModelCard("\n".join(lines) + "\n")


def card_metadata(model, languages: List[str], results: List[Dict]) -> ModelCardData:
    """The card's YAML: the Hub mixin's tags, the languages, datasets and model-index results, the card data."""
    info = model.card_data
    eval_results = [EvalResult(task_type="translation", dataset_type=r.get("dataset_type", "multi30k"),
                               dataset_name=r.get("dataset_name", "Multi30k"), dataset_split=r.get("split"),
                               dataset_config=r.get("direction"),
                               metric_type=r["metric"], metric_name=r.get("metric_name", r["metric"]),
                               metric_value=float(r["value"])) for r in results]
    base = model._hub_mixin_info.model_card_data.to_dict()
    return ModelCardData(
        **{k: v for k, v in base.items() if k in ("library_name", "license", "pipeline_tag", "tags")},
        language=languages or None, datasets=info.get("datasets"), metrics=["bleu", "chrf"],
        model_name=info.get("name", "transformer_hub model"), eval_results=eval_results or None,
        training=info.get("training") or None, provenance=info.get("provenance") or None,
        quality=info.get("quality") or None, data=info.get("data") or None,
        tokenizer=info.get("tokenizer") or None,
    )


def usage_example(cfg: TransformerConfig) -> str:
    """The card's ``translate`` call: a direction for a multilingual model, and a domain when it has them."""
    example = ('print(model.translate(["Ein Mann fährt Fahrrad."], src_lang="de", tgt_lang="fr", strategy="beam"))'
               if cfg.multilingual else
               'print(model.translate(["A man is riding a bicycle."], strategy="beam", beam_size=5))')
    if cfg.multilingual and "software" in (cfg.domains or ()):  # a domain is asked for beside the languages
        example += ('\nprint(model.translate(["Choose Format - Cells."], src_lang="en", tgt_lang="de", '
                    'domain="software", strategy="beam"))')
    return example


def architecture_table(model) -> List[str]:
    """The card's architecture rows: the config's settings that are set, and the parameter count."""
    cfg = model.config
    lines = ["## Architecture", "", "| setting | value |", "| --- | --- |"]
    for key in ("layout", "positional", "norm", "feed_forward", "attention", "d_model", "n_heads", "d_ff",
                "n_encoder_layers", "n_decoder_layers", "dropout", "share_embeddings",
                "src_vocab_size", "tgt_vocab_size", "max_len", "languages"):
        if getattr(cfg, key) is not None:  # a bilingual model has no list of languages (its pair is in the title)
            lines.append(f"| {key} | {getattr(cfg, key)} |")
    return lines + [f"| parameters | {sum(p.numel() for p in model.parameters()):,} |"]


def save_card(model, folder) -> None:
    """Write ``folder``'s README.md again from ``model``'s config and card data (the weights and every other file
    of the folder untouched): what a results or tuning script does after changing ``model.card_data``."""
    folder = Path(folder)
    model_card(model, has_plot=(folder / PLOT_FILE).is_file()).save(folder / CARD_FILE)


def tokenizer_table(found: Dict[str, Any]) -> List[str]:
    """Mean pieces per word of each tokenizer on each domain's split, a column per language."""
    rows = found.get("rows", [])
    langs = list(dict.fromkeys(r["lang"] for r in rows))
    cells = {(r["tokenizer"], r["domain"], r["lang"]): r["pieces_per_word"] for r in rows}
    lines = ["## Tokenizer", "", f"Mean SentencePiece pieces per word on each domain's {found.get('split', 'val')} "
             f"(`{found.get('command', '')}`):", ""]
    lines += [f"- {name}: {said}" for name, said in found.get("tokenizers", {}).items()] + [""]
    lines += ["| tokenizer | domain | " + " | ".join(langs) + " |", "| --- | --- |" + " --- |" * len(langs)]
    for tokenizer, domain in dict.fromkeys((r["tokenizer"], r["domain"]) for r in rows):
        lines.append(f"| {tokenizer} | {domain} | "
                     + " | ".join(f"{cells.get((tokenizer, domain, lang), ''):.2f}" for lang in langs) + " |")
    return lines + [""]


def results_table(results: List[Dict[str, Any]], pair: str) -> List[str]:
    """Markdown rows: one per (dataset, split, direction), one column per metric, in the order first met."""
    metrics = list(dict.fromkeys(r.get("metric_name", r["metric"]) for r in results))
    rows: Dict[Tuple[str, str, str], Dict[str, float]] = {}
    for r in results:
        key = (r.get("dataset_name", "Multi30k"), r.get("split", ""), r.get("direction", pair))
        rows.setdefault(key, {})[r.get("metric_name", r["metric"])] = float(r["value"])
    lines = ["| dataset | split | direction | " + " | ".join(metrics) + " |", "| --- " * (3 + len(metrics)) + "|"]
    for (dataset, split, direction), values in rows.items():
        cells = [f"{values[m]:.2f}" if m in values else "" for m in metrics]
        lines.append(f"| {dataset} | {split} | {direction} | " + " | ".join(cells) + " |")
    return lines


def card_data_from_file(path: str) -> Dict[str, Any]:
    """Recover results and training facts from a model card (best effort: a bad card is not fatal)."""
    try:
        data = ModelCard.load(path).data
    except Exception:  # noqa: BLE001 - the card is documentation; weights and config are what matter
        return {}
    info: Dict[str, Any] = {}
    if data.model_name:
        info["name"] = data.model_name
    if data.datasets:
        info["datasets"] = list(data.datasets)
    if data.eval_results:
        info["results"] = [{"dataset_name": r.dataset_name, "dataset_type": r.dataset_type, "split": r.dataset_split,
                            "metric": r.metric_type, "metric_name": r.metric_name, "value": r.metric_value}
                           | ({"direction": r.dataset_config} if r.dataset_config else {})
                           for r in data.eval_results]
    extra = data.to_dict()
    if isinstance(extra.get("training"), dict):
        info["training"] = extra["training"]
    if isinstance(extra.get("data"), list):
        info["data"] = [c for c in extra["data"] if isinstance(c, dict)]
    if isinstance(extra.get("tokenizer"), dict):
        info["tokenizer"] = extra["tokenizer"]
    for key in ("provenance", "quality"):
        if isinstance(extra.get(key), str):
            info[key] = extra[key]
    return info
