"""The POSITIVE and NONNEG property codes."""
