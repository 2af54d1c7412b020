"""Parallel corpora built from sources beyond Multi30k, written in its layout (``{split}.{lang}.gz``).

    from transformer_hub.corpus import build_libreoffice_help
    manifest = build_libreoffice_help(Path("data/libreoffice-help"), debs=[Path("debs")])
    manifest["counts"]["test"]["paragraphs"]      # the test split's paragraphs (split by page)

``python -m transformer_hub corpus libreoffice-help --out DIR`` does the same from the command line; training
reads the folder with ``train --data-dir DIR`` like Multi30k (``transformer_hub.training.data``).
"""
from .debian import PackageError
from .help_source import NotHelpError, package_name
from .libreoffice import LANGS, MANIFEST, build_libreoffice_help
from .splits import SplitError

__all__ = ["build_libreoffice_help", "LANGS", "MANIFEST", "PackageError", "NotHelpError", "SplitError",
           "package_name"]
