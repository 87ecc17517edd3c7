"""Tests of output_contracts.ledger and `contracts ledger`."""
