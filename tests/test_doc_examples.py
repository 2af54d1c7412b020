"""The Python examples of README.md and docs/python.md that run on the shipped models show what they print and
return: each block is run statement by statement, and every output its comments state is compared with the real one.

A statement's stated output is a Python literal in its trailing comment (``expr  # ('en', 1.0): prose``) or on the
comment line right after it (``# ['Un chien ...']``), compared with the value (floats at the literal's precision);
for ``print(...)`` it is the comment's text, one comment line per printed line.  Other comments are prose."""
from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from helpers.docs import page

ROOT = Path(__file__).resolve().parents[1]
MISSING = object()


def python_blocks(text: str) -> List[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def block_with(text: str, *needles: str) -> str:
    (block,) = [b for b in python_blocks(text) if all(n in b for n in needles)]
    return block


def literal(comment: str) -> Any:
    """The Python literal a comment starts with (the whole comment, or what comes before one of its ': '), else
    MISSING."""
    cuts = [len(comment)] + [m.start() for m in re.finditer(r": ", comment)]
    for cut in cuts:
        try:
            return ast.literal_eval(comment[:cut].strip())
        except (ValueError, SyntaxError):
            continue
    return MISSING


def same(value: Any, stated: Any, where: str) -> None:
    """``value`` is what was stated: floats to the stated number's decimals, containers item by item."""
    if isinstance(stated, float):
        decimals = len(repr(stated).partition(".")[2])
        assert round(value, decimals) == stated, (where, value, stated)
    elif isinstance(stated, (list, tuple)):
        assert type(value) is type(stated) and len(value) == len(stated), (where, value, stated)
        for v, s in zip(value, stated):
            same(v, s, where)
    else:
        assert value == stated, (where, value, stated)


def claims(source: str) -> Dict[int, Tuple[str, Any]]:
    """The stated outputs of a block, by the last line of the statement they follow: ("print", text) or
    ("value", literal)."""
    lines = source.splitlines()
    comment = {i + 1: line.split("#", 1)[1][1:] if "#" in line else None for i, line in enumerate(lines)}
    out = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Expr):
            continue
        end, own = node.end_lineno, trailing_comment(lines[node.end_lineno - 1])
        is_print = isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "print"
        if is_print and own is not None:
            printed, n = [own], end
            while n < len(lines) and lines[n].strip().startswith("#") and not lines[n].startswith("#"):
                printed.append(comment[n + 1])  # aligned comment lines continue the printed text
                n += 1
            out[end] = ("print", "\n".join(p.rstrip() for p in printed))
            continue
        stated = literal(own) if own is not None else MISSING
        if stated is MISSING and end < len(lines) and lines[end].startswith("# "):
            stated = literal(lines[end][2:])
        if stated is not MISSING:
            out[end] = ("value", stated)
    return out


def trailing_comment(line: str) -> Optional[str]:
    """The comment at the end of a line of code (a '#' outside string literals), without '# '."""
    code = re.sub(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", lambda m: "x" * len(m.group(0)), line)
    at = code.find("#")
    return None if at < 0 or not code[:at].strip() else line[at + 1:].strip()


def run_block(source: str, namespace: dict) -> int:
    """Run ``source`` in ``namespace``, checking every stated output; returns how many were checked."""
    stated = claims(source)
    for node in ast.parse(source).body:
        claim = stated.get(node.end_lineno)
        where = f"line {node.end_lineno}: {ast.get_source_segment(source, node)}"
        if claim and claim[0] == "value":
            same(eval(compile(ast.Expression(node.value), "<doc>", "eval"), namespace), claim[1], where)
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(ast.Module([node], type_ignores=[]), "<doc>", "exec"), namespace)
        if claim:
            assert printed.getvalue().rstrip("\n") == claim[1], (where, printed.getvalue(), claim[1])
    return len(stated)


@pytest.fixture(scope="module")
def shipped():
    from transformer_hub import Transformer

    models = ROOT / "space" / "models"
    return {"model": Transformer.from_pretrained(models / "en-de"),
            "multi": Transformer.from_pretrained(models / "multilingual")}


def test_the_readme_example_prints_and_returns_what_it_says():
    block = block_with(page("README.md"), "from transformer_hub import Transformer")
    assert run_block(block, {}) == 3  # the French sentence, the German paragraph, the language and confidences


def test_the_real_text_example_of_the_python_page(shipped):
    from transformer_hub import translate_texts

    block = block_with(page("python.md"), "src_lang=\"auto\"", "split_sentences=True", "print(r.text)")
    namespace = {"translate_texts": translate_texts, "multi": shipped["multi"]}
    assert run_block(block, namespace) == 4  # German, its language, its confidences, French
    models = block_with(page("python.md"), "ModelSet(")
    assert run_block(models, dict(namespace, model=shipped["model"])) == 1


def test_the_cli_gives_the_german_text_of_the_python_page(monkeypatch, capsys):
    """docs/cli.md: "the paragraph of the Python example, as a file, with `--strategy beam --beam-size 5`, gives the
    German text shown there"."""
    from helpers.cli import run

    assert "as a file, with `--strategy beam --beam-size 5`, gives the German text shown there" in \
        " ".join(page("cli.md").split())
    block = block_with(page("python.md"), "print(r.text)", "paragraph = ")
    paragraph = ast.literal_eval(re.search(r"^paragraph = (.*)$", block, re.M).group(1))
    german = claims(block)[next(n for n, line in enumerate(block.splitlines(), 1) if line.startswith("print(r.text)"))]
    status, out, err = run(["translate", "--model", str(ROOT / "space" / "models" / "multilingual"), "--src-lang",
                            "auto", "--tgt-lang", "de", "--split-sentences", "--strategy", "beam", "--beam-size", "5"],
                           paragraph.encode(), monkeypatch, capsys)
    assert status == 0, err
    assert out.rstrip("\n") == german[1]


def test_a_wrong_stated_output_fails():
    run_block("x = [0.123, 'a']\nx  # [0.12, 'a']: rounded as stated\nprint('one\\ntwo')  # one\n"
              "                     # two\n", {})
    with pytest.raises(AssertionError):
        run_block("x = 2\nx + 1  # 4: prose after the literal\n", {})
    with pytest.raises(AssertionError):
        run_block("x = (1, 2)\nx\n# (1, 3)\n", {})
    with pytest.raises(AssertionError):
        run_block("print('one')  # two\n", {})
    assert claims("y = 1  # 2\nx = f(1)  # the prose of an assignment\nz  # not a literal: prose\n") == {}
