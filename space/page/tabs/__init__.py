"""The built-in tabs; importing this package registers them in ``space.page.plugins.TABS``."""
from . import attention, compare, inside, playground, translate, variants  # noqa: F401
