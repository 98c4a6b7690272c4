"""promptcache: find, price and fix what breaks LLM prompt caching.

Library entry points: :func:`promptcache.audit.audit` (request logs → cache simulation and
cost), with the data model in :mod:`promptcache.model`.
"""

__version__ = "0.1.0"
