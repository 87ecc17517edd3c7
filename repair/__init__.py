"""contracts.repair."""
