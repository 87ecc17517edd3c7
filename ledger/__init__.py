"""contracts.ledger."""
