"""KV-cache capacity planning (``promptcache kv``).

- :mod:`.arch`: attention kind (MHA, GQA, MQA, MLA) and KV bytes per token from a Hugging Face
  ``config.json``.
- :mod:`.presets`: named models (``rules/models/*.yaml``) and engine defaults (``rules/kv.yaml``).
- :mod:`.memory`: weights estimate, GPU budget, tokens and contexts that fit.
- :mod:`.sweep`: hit ratio against LRU capacity over a log, many capacities in one pass.
- :mod:`.tiers`: CPU/SSD offload tiers and loading versus recomputing a prefix.
- :mod:`.plan`: the command as a library call and its JSON record; :mod:`.report`: the terminal report.
"""

from .arch import Architecture, from_config, kv_bytes_per_token
from .memory import estimate_params, plan_memory
from .plan import KvOptions, KvReport, kv_record, run_kv

__all__ = ["Architecture", "KvOptions", "KvReport", "estimate_params", "from_config", "kv_bytes_per_token",
           "kv_record", "plan_memory", "run_kv"]
