"""contracts.mining."""
