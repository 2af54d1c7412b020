"""Imports flow one way (lazy imports count too): registry <- config <- state/tokenizer/kernels <- decoding/hub
<- model/variants <- export/train/cli."""
import ast
import sys
from pathlib import Path
from typing import Dict, Set

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "transformer_hub"
sys.path.insert(0, str(PACKAGE.parent))  # `scripts` lives at the repository root

from scripts.import_graph import imports, module_name  # noqa: E402  (the resolver deploy_space.py uses too)


def our_imports(path: Path) -> Set[str]:
    """Every ``transformer_hub`` module ``path`` imports, at the top or inside a function, as dotted names."""
    found = imports(path, module_name(PACKAGE.parent, path))
    return {name for name in found if name.startswith("transformer_hub.")}


def imports_of(relative: str) -> Set[str]:
    path = PACKAGE / relative
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return set().union(*(our_imports(f) for f in files))


def touches(names: Set[str], unit: str) -> Set[str]:
    """The names that are ``transformer_hub.<unit>`` or inside it."""
    prefix = f"transformer_hub.{unit}"
    return {n for n in names if n == prefix or n.startswith(prefix + ".")}


def test_the_resolver_sees_lazy_and_relative_imports(tmp_path):
    assert "transformer_hub.registry" in imports_of("config.py")
    assert "transformer_hub.model" in imports_of("variants/norm.py")  # ``from ..model import ...``


def test_registry_imports_nothing_of_ours():
    assert imports_of("registry.py") == set()


def test_config_imports_only_the_registry():
    assert {n.rsplit(".", 1)[0] if n.count(".") > 1 else n for n in imports_of("config.py")} == \
        {"transformer_hub.registry"}


@pytest.mark.parametrize("lower", ["config.py", "state.py", "losses.py", "tokenizer.py", "kernels.py"])
@pytest.mark.parametrize("upper", ["model", "variants", "decoding", "hub", "export", "train", "cli", "checkpoint"])
def test_the_foundations_do_not_import_what_sits_above_them(lower, upper):
    assert touches(imports_of(lower), upper) == set()


@pytest.mark.parametrize("lower", ["decoding", "hub.py"])
@pytest.mark.parametrize("upper", ["model", "variants", "export", "train", "cli", "checkpoint"])
def test_decoding_and_the_hub_take_the_model_they_are_given(lower, upper):
    """Both work on the model's interface (or the class they are handed): the model sits above them."""
    assert touches(imports_of(lower), upper) == set()


@pytest.mark.parametrize("lower", ["model.py", "variants"])
@pytest.mark.parametrize("upper", ["export", "train", "cli", "checkpoint"])
def test_the_model_does_not_import_what_sits_above_it(lower, upper):
    assert touches(imports_of(lower), upper) == set()


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
