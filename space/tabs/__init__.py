"""The built-in tabs; importing this package registers them in ``space.plugins.TABS``."""
from . import attention, compare, inside, translate, variants  # noqa: F401
