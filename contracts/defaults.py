"""Defaults several packages share (one place, so that they cannot drift apart)."""

from __future__ import annotations

#: The seed of task folds, fault injection, bootstrap resamples and repair runs when none is given.
DEFAULT_SEED = 13
