"""Tests of `output_contracts.cli`: every command through the command line, its options, help and outputs."""
