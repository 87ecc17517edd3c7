"""Tests of `bench/`: the benchmark harness and its scripts at a small size."""
