"""turnfork's benchmark suite (not part of the product; see BENCHMARKS.md)."""
