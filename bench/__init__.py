"""NovelGraph benchmarks: scripts that print figures against a baseline measured in the same run.

Run them all with ``make bench`` (``python -m bench.run_all [--size small|medium|large] [--only NAME]``),
or one alone, e.g. ``python -m bench.bench_search --chunks 100000``. Nothing here is a test: the suite
never asserts on timings. Results are recorded in ``bench/RESULTS.md``.
"""
