"""promptcache: find, price and fix what breaks LLM prompt caching.

The library behind the commands:

- :func:`audit` (``promptcache audit``): request logs → simulated and priced caching, findings;
- :func:`propose` (``promptcache propose``): stable-first templates, re-simulated;
- :func:`export_trace` (``promptcache export``): an anonymised, replayable trace.

Their results convert to pandas DataFrames (``.to_pandas()``; ``pip install
'promptcache[data]'``). The pipeline itself is :mod:`promptcache.pipeline`; the data model
:mod:`promptcache.model`.
"""

__version__ = "0.1.0"

from . import _compiled  # noqa: E402

_compiled.install()  # before any compiled module is imported: an edited source wins over a stale build

# The subpackages named like an API function are imported first: importing a subpackage for
# the first time sets it as an attribute of this package, and would replace the function
# (promptcache.propose worked once, then was the module).
from . import propose as _propose_package  # noqa: E402,F401  (imported for its side effect)
from .api import Audit, Export, Proposals, audit, export_trace, propose  # noqa: E402

__all__ = ["Audit", "Export", "Proposals", "audit", "export_trace", "propose", "__version__"]
