"""``python -m promptcache``."""

from .cli import main

main()
