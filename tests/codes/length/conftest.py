"""LENGTH's tests read the order worlds they share with FORMAT's (tests/codes/format_length_world.py)."""

from tests.codes.format_length_world import cs, world_corpus, world_cs  # noqa: F401 (fixtures)
