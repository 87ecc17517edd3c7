"""Tests of contracts.ledger and `contracts ledger`."""
