"""Running ``python -m transformer_hub`` in the test's process: stdin given as bytes, stdout/stderr captured."""
import io
import sys
from typing import List, Tuple

from transformer_hub import cli


def run(argv: List[str], stdin: bytes = b"", monkeypatch=None, capsys=None) -> Tuple[int, str, str]:
    """``cli.main(argv)`` reading ``stdin``: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err
