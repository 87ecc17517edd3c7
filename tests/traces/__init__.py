"""Tests of `output_contracts.traces`: input adapters, ingest, the Parquet corpus, the mining view and the
tool registry's model and loader."""
