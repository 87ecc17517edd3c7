"""contracts.checks."""
