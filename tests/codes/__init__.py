"""Tests of `output_contracts.codes`: the registry of property codes and its shared modules here, the
engine in engine/, and one folder per code (its checks, miner, cases and golden violations)."""
