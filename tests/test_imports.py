"""Imports flow one way (lazy imports count too), floor by floor: each top-level unit of the package (a module or
a subpackage) imports only units on lower floors, and the package has no import cycle."""
import ast
from pathlib import Path
from typing import Dict, Optional, Set

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
    {"scale"},  # a corpus on Ray Data through the pipeline (the ``scale`` extra), its blocks resumable
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
    assert not {"text"} & found["decoding"]  # sentences go down to decoding, which never calls the text pipeline


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
SPACE_FLOORS = [  # the Space's packages, bottom first, each with its modules' floors (bottom first): a package
    # imports only packages of lower floors, and a module of a package only that package's lower modules
    ("hosting", [{"access", "connections", "limits", "logs", "sandbox"}]),  # admission (API keys, rate limits,
    # connections' deadlines and shares), limits and their
    # messages, logs, the worker process a document is read in
    ("pictures", [{"labels", "architecture", "word_view"},  # every plot and figure, and the labels
                  {"attention", "beam_tree", "inside", "playground"},  # of pieces they share; the static views are made of
                  {"static_attention"}]),  # the others' parts
    ("playground", [{"runs"}, {"service"}]),  # one training at a time, its queue; the tab's handlers
    ("serving", [{"languages", "model_store", "batching", "glossary", "leaving"},  # the models' serving: the store, the decoding
                 {"choice", "decoder"},  # worker behind the micro-batcher, the per-direction choice,
                 {"context"},  # one SpaceContext (store, chooser, decoder, limits, the Playground's runner),
                 {"quality", "describe"},  # the quality worker, the models described,
                 {"service"}]),  # what the tabs and routes call (SpaceModels: the library's pipeline)
    ("rest", [{"input", "api_docs"},  # reading a request and the shape of an error answer; the docs page
              {"html", "schema", "jsonrpc"},  # html texts; the OpenAPI description; MCP's bodies checked
              {"libre_schema", "files", "routes"},  # /translate, /detect, /languages; documents and downloads
              {"libre"}]),  # the rest of LibreTranslate's API (files, settings, suggestions)
    ("page", [{"examples", "registry", "keys"},  # the Gradio page: the plugin registry, the page's key handling,
              {"comparisons", "inside", "interactive", "documents"},  # what the tabs show,
              {"tabs"},  # the tabs,
              {"plugins", "tools"},  # the built-in and entry-point tabs; Gradio's API and MCP tools,
              {"demo"}]),  # build_demo
    ("server", []),  # the page and the routes on one server (a module)
    ("scale", []),  # the routes as Ray Serve replicas (a module; the ``scale`` extra)
]
SPACE_FLOOR = {package: level for level, (package, _) in enumerate(SPACE_FLOORS)}


def space_files() -> Dict[str, Path]:
    """Every module of space (the shipped models' folder holds none) by dotted name, the package's own left out."""
    files = {module_name(SPACE.parent, path): path for path in SPACE.rglob("*.py")
             if "models" not in path.relative_to(SPACE).parts[:1]}
    files.pop("space", None)  # the front door re-exports from the page and the serving, lazily
    return files


def space_unit(name: str, depth: int) -> Optional[str]:
    """``space.serving.service.run`` -> ``serving`` (depth 1) or ``service`` (depth 2); None for a plain name."""
    parts = name.split(".")
    if len(parts) <= depth or parts[0] != "space":
        return None
    path = SPACE.joinpath(*parts[1:depth + 1])
    return parts[depth] if path.is_dir() or path.with_suffix(".py").is_file() else None


def space_imports(depth: int, within: Optional[str] = None) -> Dict[str, Set[str]]:
    """Each package of space (depth 1), or each module of package ``within`` (depth 2) -> the ones it imports."""
    found: Dict[str, Set[str]] = {}
    for name, path in space_files().items():
        parts = name.split(".")
        if len(parts) <= depth or (within and parts[1] != within):
            continue
        unit = parts[depth]
        targets = {n for n in imports(path, name) if not within or n.startswith(f"space.{within}.")}
        found.setdefault(unit, set()).update({space_unit(n, depth) for n in targets} - {None, unit})
    return found


def test_the_space_is_its_packages_and_the_server():
    """A new flat module (or package) of space fails here until it is given a floor."""
    units = {p.stem for p in SPACE.glob("*.py") if p.name != "__init__.py"}
    units |= {p.name for p in SPACE.iterdir() if (p / "__init__.py").is_file()}
    assert units == set(SPACE_FLOOR)
    assert not (SPACE / "models" / "__init__.py").exists()


def test_each_space_package_imports_only_lower_packages():
    found = space_imports(1)
    assert found["rest"] >= {"serving", "hosting"} and found["page"] >= {"rest", "serving", "pictures"}
    above = {(unit, target) for unit, targets in found.items() for target in targets
             if SPACE_FLOOR[target] >= SPACE_FLOOR[unit]}
    assert above == set(), f"space packages importing from their floor or above: {sorted(above)}"


@pytest.mark.parametrize("package, floors", [(p, f) for p, f in SPACE_FLOORS if f], ids=lambda v: str(v)[:12])
def test_each_module_of_a_space_package_imports_only_lower_modules(package, floors):
    floor = {unit: level for level, units_ in enumerate(floors) for unit in units_}
    found = space_imports(2, within=package)
    modules = {p.stem for p in (SPACE / package).glob("*.py") if p.name != "__init__.py"}
    modules |= {p.name for p in (SPACE / package).iterdir() if (p / "__init__.py").is_file()}
    assert modules == set(floor), f"the modules of space/{package} and their floors differ"
    above = {(unit, target) for unit, targets in found.items() for target in targets if floor[target] >= floor[unit]}
    assert above == set(), f"space/{package}: modules importing from their floor or above: {sorted(above)}"
