"""Tests of `output_contracts.mining`, the miner's driver: parts, folds, verification, diff, maps,
patterns, the Dask engine and the data it reads."""
