"""output_contracts.traces: format adapters, ingest, the Parquet corpus, the tool registry."""
