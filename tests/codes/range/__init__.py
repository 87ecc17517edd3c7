"""Tests of RANGE (`codes/range/`): its checks, its miner, its cases and their golden violations."""
