"""``python -m transformer_hub COMMAND ...`` (also the ``transformer-hub`` console script).

Commands live in the registry ``COMMANDS`` (name -> function taking the remaining argv and
returning an exit status); add one with ``@command("name", "one-line help")``.

    python -m transformer_hub download  [--langs en,de,fr,cs] [--dest DIR]
    python -m transformer_hub corpus    libreoffice-help --out DIR [--debs F... | --tree DIR]
    python -m transformer_hub translate --model space/models/en-de [--strategy beam --beam-size 5] < src.txt > hyp.txt
    python -m transformer_hub evaluate  --model space/models/en-de --src val.en.gz --ref val.de.gz [--lowercase]
    python -m transformer_hub export    --model space/models/en-de --format ctranslate2 --out en-de-ct2 [--quantization int8]
    python -m transformer_hub train     ...   (forwarded to transformer_hub.training.trainer.main)

Errors a user can cause (missing data, a missing model, a bad option, an
unreadable file, an unknown command) end with exit status 2 and one line on
stderr saying what is wrong and what to do, never a traceback; ``--debug`` (or
``TRANSFORMER_HUB_DEBUG=1``) shows the traceback, for developers.

One module per command (``translate.py``, ``evaluate.py``, ``export.py``, ``train.py``, ``download.py``,
``corpus.py``; the server's database, ``suggestions`` and ``keys``, in ``database.py``); what they share in
``options.py``; the registry in ``commands.py``; ``main`` in ``main.py``.
"""
from .commands import COMMANDS, CLIError, command
from .main import main, run_command

__all__ = ["main", "run_command", "COMMANDS", "command", "CLIError"]
