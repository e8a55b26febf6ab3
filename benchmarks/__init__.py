"""turnfork's benchmark suite: ``python -m benchmarks`` (see BENCHMARKS.md); not the product.

Layout: ``run`` (command line and the list of benchmark modules), ``harness`` (interleaved
timing, rows, table, JSON), ``workloads`` (seeded logs of DSH's shape), ``bench_*`` (one
benchmark each), ``baseline_*`` and ``checks`` (the contenders a user would otherwise pick).
"""
