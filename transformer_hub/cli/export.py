"""``python -m transformer_hub export``: a folder CTranslate2 or transformers' MarianMTModel loads."""
from __future__ import annotations

from typing import List

from ..errors import Parser
from .commands import PROG, CLIError, command
from .options import load_model


@command("export", "convert a model for CTranslate2 (--format ctranslate2) or transformers' MarianMTModel (marian)")
def export_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} export", description="Write a folder that CTranslate2 (ctranslate2.Translator) or "
                    "transformers (MarianMTModel / MarianTokenizer, the paper's block only) loads directly.")
    parser.add_argument("--model", required=True, help="a save_pretrained folder or a Hub repo id")
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    parser.add_argument("--format", required=True, choices=["ctranslate2", "marian"], help="the target runtime")
    parser.add_argument("--out", required=True, help="the folder to write")
    parser.add_argument("--quantization", default=None, help="ctranslate2 only: float32 (default), int8, int8_float32, "
                        "int16, float16, bfloat16, int8_float16, int8_bfloat16")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    args = parser.parse_args(argv)
    from ..export import export

    model = load_model(args.model, args.revision)
    try:
        path = export(model, args.out, args.format, quantization=args.quantization, force=args.force)
    except (ValueError, ImportError, OSError) as exc:  # refused variant, missing package, existing folder
        raise CLIError(str(exc).strip().splitlines()[0])
    print(f"wrote the {args.format} export of {args.model} to {path}")
    return 0
