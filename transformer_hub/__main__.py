"""``python -m transformer_hub``: see ``cli.py``."""
from .cli import main

raise SystemExit(main())
