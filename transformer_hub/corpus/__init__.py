"""Parallel corpora built from sources beyond Multi30k, written in its layout (``{split}.{lang}.gz``).

    from transformer_hub.corpus import build_libreoffice_help
    manifest = build_libreoffice_help(Path("data/libreoffice-help"), debs=[Path("debs")])
    manifest["counts"]["test"]["paragraphs"]      # the test split's paragraphs (split by page)

    from transformer_hub.corpus import build_debian_catalogs
    manifest = build_debian_catalogs(Path("data/debian-catalogs"), cache=Path("data/debian-cache"))

``python -m transformer_hub corpus libreoffice-help --out DIR`` (or ``debian-catalogs``) does the same from the
command line; training reads the folder with ``train --data-dir DIR`` like Multi30k (``transformer_hub.training.data``).
"""
from .contents import ContentsError
from .debian import PackageError
from .debian_catalogs import build_debian_catalogs
from .help_source import NotHelpError, package_name
from .libreoffice import LANGS, MANIFEST, build_libreoffice_help
from .mo import Catalog, CatalogError, Message, read_mo
from .splits import SplitError

__all__ = ["build_libreoffice_help", "build_debian_catalogs", "LANGS", "MANIFEST", "PackageError", "NotHelpError",
           "SplitError", "ContentsError", "CatalogError", "Catalog", "Message", "read_mo", "package_name"]
