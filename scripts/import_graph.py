"""Which modules a Python file imports, read from its syntax tree (imports inside functions too).

One resolver for the two places that follow imports: ``tests/test_imports.py`` (the package's layering and
cycles) and ``scripts/deploy_space.py`` (the modules the Space needs).  Names come back absolute; a
``from package import name`` gives both ``package`` and ``package.name`` (the name may be a submodule).
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional, Set


def module_name(root: Path, path: Path) -> str:
    """``root/a/b/c.py`` -> ``a.b.c``; ``root/a/b/__init__.py`` -> ``a.b``."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_file(root: Path, module: str) -> Optional[Path]:
    """The file of ``module`` under ``root`` (a module or a package's ``__init__.py``), or None."""
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imports(path: Path, module: str) -> Set[str]:
    """Every module name ``path`` (the file of ``module``) imports, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found
