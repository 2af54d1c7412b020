"""A corpus translated on Ray Data: the blocks without a part file become a dataset (one row per block),
``map_batches`` hands them to a pool of actors (``CorpusTranslator``: one ``Translator``, its models loaded once
per actor, one CPU each), and the driver writes each block's part file as it comes back, so a job cut at any
moment loses at most the blocks in flight.  The driver reads the input and writes the output: on a cluster
only the driver needs the files; every node needs ``transformer_hub`` (and the models' folder) installed."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ..errors import UserError
from .blocks import Item, PartsFolder, blocks_of, fingerprint, is_jsonl, read_items
from .translator import Translator

INSTALL = "pip install 'transformer_hub[scale]'"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # an actor per core: its libraries on one thread


class MissingRay(UserError):
    """Ray is not installed: the one line says what to install."""


def require_ray(purpose: str = "translate-corpus"):
    """``ray`` with Ray Data, or ``MissingRay`` naming the extra that installs it."""
    try:
        import ray
        import ray.data  # noqa: F401  (the extra's "data" part)
    except ImportError:
        raise MissingRay(f"{purpose} needs Ray, which is not installed: {INSTALL}") from None
    return ray


@dataclass
class CorpusJob:
    """What to translate and how: the input and output, the ``Translator``'s options, the blocks and actors."""

    input: str
    output: str
    translator: Dict[str, Any]        # Translator(**translator): model, src_lang, tgt_lang, config, ...
    field: str = "text"
    block_lines: int = 1000
    actors: int = 2
    address: Optional[str] = None     # None: a local cluster (or the one already started); "auto": a running one
    progress: bool = True

    def manifest(self, lines: int) -> Dict[str, Any]:
        """What the parts must have been made from to be reused."""
        options = {k: (asdict(v) if hasattr(v, "__dataclass_fields__") else v) for k, v in self.translator.items()}
        return {"input_sha256": fingerprint(self.input), "lines": lines, "block_lines": self.block_lines,
                "field": self.field if is_jsonl(self.input) else None,
                "options": json.loads(json.dumps(options, default=repr))}


@dataclass
class JobReport:
    lines: int
    blocks: int
    translated_blocks: int            # this run (the others were done before)
    bad: List[Dict[str, Any]] = field(default_factory=list)


class CorpusTranslator:
    """Ray Data's actor class: a ``Translator`` built once; each batch is blocks (``block``, ``first``, ``items``
    as JSON) and comes back as (``block``, ``rows`` as JSON)."""

    def __init__(self, **options: Any) -> None:
        self.translator = Translator(**options)

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, List[Any]]:
        blocks, rows = [], []
        for block, first, items in zip(batch["block"], batch["first"], batch["items"]):
            parsed = [Item(text, error) for text, error in json.loads(items)]
            blocks.append(int(block))
            rows.append(json.dumps(self.translator.translate(parsed, int(first)), ensure_ascii=False))
        return {"block": blocks, "rows": rows}


PRELOAD = ["torch", "transformer_hub.scale.translator"]  # what an actor imports before it can load a model


def start_cluster(ray, address: Optional[str] = None, cpus: int = 2) -> None:
    """Ray, unless already started: a local cluster of ``cpus`` CPUs (``address`` None) or a running one.

    A local cluster starts its worker processes ahead of the work, and there each imports ``PRELOAD`` (Ray's
    ``preload_python_modules``) while the job is being prepared, so an actor's start is loading the models, not
    importing torch. The one-thread settings reach those workers through the environment they inherit, not a
    ``runtime_env``: a job with its own runtime_env cannot use the workers started beforehand and waits for new
    ones. A running cluster's workers do not inherit this process's environment, so there the settings travel in
    the job's runtime_env (its workers are started as its own ``ray start`` configured them)."""
    if ray.is_initialized():
        return
    options: Dict[str, Any] = dict(address=address, log_to_driver=False, include_dashboard=False)
    if address:
        ray.init(**options, runtime_env={"env_vars": ONE_THREAD})
        return
    saved = {name: os.environ.get(name) for name in ONE_THREAD}
    os.environ.update(ONE_THREAD)  # inherited by the raylet, and from it by every worker
    try:
        ray.init(**options, num_cpus=cpus, _system_config={"preload_python_modules": PRELOAD})
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_job(job: CorpusJob, on_block: Optional[Callable[[int], None]] = None) -> JobReport:
    """Translate ``job``'s blocks without a part file on Ray, write each as it comes, then join them into the
    output; ``on_block(block)`` after each part is written."""
    ray = require_ray()
    items = read_items(job.input, job.field)
    blocks = blocks_of(items, job.block_lines)
    parts = PartsFolder(job.output)
    parts.open(job.manifest(len(items)))
    done = set(parts.done(len(blocks)))
    todo = [b for b in range(len(blocks)) if b not in done]
    if todo:
        _translate_blocks(ray, job, blocks, todo, parts, on_block)
    bad = parts.join(len(blocks), jsonl=is_jsonl(job.output))
    return JobReport(lines=len(items), blocks=len(blocks), translated_blocks=len(todo), bad=bad)


def _translate_blocks(ray, job: CorpusJob, blocks: List[List[Item]], todo: List[int], parts: PartsFolder,
                      on_block: Optional[Callable[[int], None]]) -> None:
    start_cluster(ray, job.address, max(job.actors, os.cpu_count() or 1))
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = job.progress
    rows = [{"block": b, "first": b * job.block_lines,
             "items": json.dumps([(i.text, i.error) for i in blocks[b]], ensure_ascii=False)} for b in todo]
    dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
        CorpusTranslator, fn_constructor_kwargs=job.translator, batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=min(job.actors, len(rows))), num_cpus=1)
    for row in dataset.iter_rows():  # as each block comes back, whatever its order
        parts.write(int(row["block"]), json.loads(row["rows"]))
        if on_block is not None:
            on_block(int(row["block"]))
