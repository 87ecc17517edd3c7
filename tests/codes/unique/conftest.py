"""UNIQUE's tests read the order worlds they share with RANGE's (tests/codes/range_unique_world.py)."""

from tests.codes.range_unique_world import cs, world_corpus, world_cs  # noqa: F401 (fixtures)
