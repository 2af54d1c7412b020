"""Imports flow one way (lazy imports count too), floor by floor: each top-level unit of the package (a module or
a subpackage) imports only units on lower floors, and the package has no import cycle."""
import ast
from pathlib import Path
from typing import Dict, Set

import pytest

from scripts.import_graph import imports, module_name  # the resolver deploy_space.py uses too

PACKAGE = Path(__file__).resolve().parents[1] / "transformer_hub"

FLOORS = [  # bottom first; a unit may import only units of lower floors
    {"registry", "errors", "caching", "store"},  # the bottom floor: one Registry, error types, a weak cache, the
    # server's SQLite file (suggestions, API keys)
    {"config"},  # TransformerConfig (== config.json)
    {"tokenizer", "model"},  # SentencePiece; the network of section 3, its variants, cache, kernels, losses
    {"hub"},  # strict loading, the model card, results records, the per-direction choice of model
    {"decoding"},  # search over the model's encode/decode (+ cache)
    {"text"},  # segmentation, language detection, and the pipeline over them: split, detect, choose, decode, join
    {"transformer", "formats", "corpus"},  # the public class: the network + the Hub + translate; documents (text's
    # sentences); corpora built from other sources (text's sentences), in the layout training reads
    {"export", "training", "rerank"},  # exports and their engine; the trainer; the quality mode (n-best reranking)
    {"inside", "playground"},  # what a trained model shows; training one live (both use the schedule)
    {"cli"},  # the command line
    {"__main__"},  # ``python -m transformer_hub``
]
FLOOR = {unit: level for level, units in enumerate(FLOORS) for unit in units}


def our_imports(path: Path) -> Set[str]:
    """Every ``transformer_hub`` module ``path`` imports, at the top or inside a function, as dotted names."""
    found = imports(path, module_name(PACKAGE.parent, path))
    return {name for name in found if name.startswith("transformer_hub.")}


def unit_of(name: str) -> str:
    """``transformer_hub.decoding.beam`` -> ``decoding``."""
    return name.split(".")[1]


def is_unit(name: str) -> bool:
    """A module or subpackage (not a name such as ``__version__`` imported from the package)."""
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def units() -> Dict[str, Set[str]]:
    """Each unit -> the units it imports (itself excluded)."""
    found: Dict[str, Set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE and path.name == "__init__.py":
            continue  # the package's front door re-exports from every floor
        unit = unit_of(module_name(PACKAGE.parent, path))
        found.setdefault(unit, set()).update(unit_of(n) for n in our_imports(path) if is_unit(unit_of(n)))
    return {unit: targets - {unit} for unit, targets in found.items()}


def test_the_resolver_sees_lazy_and_relative_imports():
    assert "transformer_hub.registry" in our_imports(PACKAGE / "config.py")
    assert "transformer_hub.model.model" in our_imports(PACKAGE / "model" / "variants" / "norm.py")  # ``..model``


def test_every_unit_has_a_floor():
    assert set(units()) - set(FLOOR) == set()


@pytest.mark.parametrize("unit", sorted(FLOOR))
def test_each_unit_imports_only_lower_floors(unit):
    above = {target for target in units().get(unit, ()) if FLOOR[target] >= FLOOR[unit]}
    assert above == set(), f"{unit} (floor {FLOOR[unit]}) imports {sorted(above)} from its floor or above"


def test_the_floors_are_what_the_design_says():
    """The model never imports decoding or the Hub; decoding never imports export; the Hub never the model."""
    found = units()
    assert not {"decoding", "hub", "transformer", "training"} & found["model"]
    assert not {"export", "transformer", "training", "inside", "cli"} & found["decoding"]
    assert not {"model", "transformer", "decoding"} & found["hub"]
    assert not {"text"} & found["decoding"]  # texts reach the pipeline through decoding's TEXT_PIPELINES


def test_the_class_defines_its_conveniences_and_the_package_attaches_nothing():
    """``translate`` and the Hub methods are the class's own or its visible mixin's; ``__init__`` only re-exports."""
    from transformer_hub import Transformer
    from transformer_hub.hub import HubMixin

    assert "translate" in Transformer.__dict__ and issubclass(Transformer, HubMixin)
    assert {"from_pretrained", "_save_pretrained"} <= set(HubMixin.__dict__)
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    assigned = [t for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Attribute)]
    assert assigned == []


def test_no_import_cycle_in_the_package():
    """Counting lazy imports too; an import of the package itself (``from .. import x``) is not an edge back."""
    files = {module_name(PACKAGE.parent, f): f for f in PACKAGE.rglob("*.py")}

    def owner(name: str) -> str:  # "transformer_hub.model.Transformer" -> "transformer_hub.model"
        while name not in files and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph = {m: {owner(n) for n in our_imports(f)} - {m, "transformer_hub"} for m, f in files.items()}
    graph = {m: {n for n in targets if not m.startswith(n + ".")} for m, targets in graph.items()}
    state: Dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:  # on the current path: we came back to it
                pytest.fail("import cycle: " + " -> ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


SPACE = PACKAGE.parent / "space"
SPACE_FLOORS = [  # the Space, bottom first: the same rule (a module imports only modules of lower floors)
    {"limits", "languages", "models_store", "batching", "access", "logs", "rest_input", "api_docs", "examples",
     "labels", "playground_plots", "playground_runs", "view", "glossary"},  # what needs no other module of the Space
    {"choice", "decoder", "attention_plots", "inside_plots", "tree_plot", "rest_html", "rest_schema"},  # the model
    # per direction, the decoding worker, pictures, the html format and the OpenAPI description
    {"context", "libre_schema", "plots", "static_attention"},  # one SpaceContext: store, chooser, decoder, limits;
    # the pictures made of other pictures' parts (the diagram and the Attention tab's heatmap; the static views)
    {"quality"},  # quality "best": the model tuned for a direction, reranking in the decoding worker
    {"service", "describe", "registry", "playground_service"},  # what the tabs call (SpaceModels: the pipeline's)
    {"comparisons", "files", "inside", "interactive", "rest"},  # one-sentence tabs, documents, Inside, words, REST
    {"documents", "libre"},  # the page's document box; the rest of LibreTranslate's API (files, web UI)
    {"tabs"},  # the page's tabs
    {"plugins", "tools"},  # what other programs call (Gradio's API, MCP)
    {"demo"},  # the page
    {"server"},  # the page and the routes on one server
]


def space_units() -> Dict[str, Set[str]]:
    """Each module (or subpackage) of space -> the ones of space it imports."""
    found: Dict[str, Set[str]] = {}
    for path in SPACE.rglob("*.py"):
        name = module_name(SPACE.parent, path)
        if "models" in path.relative_to(SPACE).parts or name == "space":
            continue
        unit = name.split(".")[1]
        targets = {n.split(".")[1] for n in imports(path, name) if n.startswith("space.")}
        found.setdefault(unit, set()).update(targets - {unit})
    return found


def test_the_space_imports_floor_by_floor():
    floor = {unit: level for level, units_ in enumerate(SPACE_FLOORS) for unit in units_}
    found = space_units()
    assert {"rest", "service", "tabs"} <= set(found) and found["rest"] >= {"service", "rest_html"}
    assert set(found) - set(floor) == set(), "a module of space without a floor"
    above = {(unit, target) for unit, targets in found.items() for target in targets
             if target in floor and floor[target] >= floor[unit]}
    assert above == set(), f"space modules importing from their floor or above: {sorted(above)}"
