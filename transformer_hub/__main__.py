"""``python -m transformer_hub COMMAND ...``: see ``transformer_hub.cli``."""
from .cli import main

raise SystemExit(main())
