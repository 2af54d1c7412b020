"""The library and the Space keep to the project's sizes: no file over 400 lines, no function over 60."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("transformer_hub", "space")
MAX_FILE_LINES, MAX_FUNCTION_LINES = 400, 60


def sources():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def test_no_file_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES}
    assert long == {}


def long_functions(text: str) -> dict:
    """``{"LINE NAME": lines}`` of each function over the limit, from its ``def`` to its last statement (docstring
    included, decorators not)."""
    return {f"{node.lineno} {node.name}": node.end_lineno - node.lineno + 1 for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES}


def test_no_function_over_60_lines():
    long = {f"{path.relative_to(ROOT)}:{where}": n for path in sources()
            for where, n in long_functions(path.read_text(encoding="utf-8")).items()}
    assert long == {}


def test_a_61_line_function_is_caught_and_a_60_line_one_is_not():
    def function(name: str, lines: int) -> str:
        return f"@decorator\ndef {name}():\n" + "    x = 1\n" * (lines - 1)

    assert long_functions(function("short", 60) + function("long", 61) + "class C:\n    " +
                          function("method", 62).replace("\n", "\n    ")) == {"63 long": 61, "126 method": 62}
