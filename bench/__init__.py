"""The benchmarks, by subject; not part of the package or its tests.

Run each from the repository root as a module, e.g. ``python -m bench.runner.run_bench``;
``bench/all`` runs every row of the performance goals. See ``bench/README.md``.
"""
