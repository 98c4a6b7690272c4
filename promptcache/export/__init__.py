"""Anonymised, replayable traces of a log's traffic shape (``promptcache export``)."""
