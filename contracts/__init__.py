"""contracts: offline contract mining and trace auditing for tool-using AI agents.

The library is plain functions over polars frames, paths and frozen dataclasses; the CLI (`contracts`)
is a thin layer over it. Subpackages: `traces` (formats, ingest, corpus, registry), `mining`, `checks`,
`repair`, `ledger`.
"""

import os as _os

# In a source checkout the subpackages are sibling folders of this one (DESIGN §1); setuptools maps them
# for installs. When the checkout itself is first on sys.path (`python -m pytest`, `python -c` from the
# repository root), let `contracts.mining` & co. resolve to those folders too.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_root, "mining", "__init__.py")) and _root not in __path__:
    __path__.append(_root)

from contracts.errors import ContractsError  # noqa: E402
from contracts.jsonutil import canonical_json  # noqa: E402

__version__ = "0.1.0"
__all__ = ["ContractsError", "__version__", "canonical_json"]
