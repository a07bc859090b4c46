"""Reliability and security suite (issue 8): crash safety, concurrency, isolation, deletion, fuzzing, limits.

Short variants run with ``make test``; ``ENGRAM_LONG=1`` (or ``python bench/reliability.py``) runs the
long ones. Figures are printed (``pytest -s``) and, when ``ENGRAM_RELIABILITY_REPORT`` names a file,
appended to it as JSON lines.
"""
