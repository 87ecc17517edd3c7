"""Tests of TYPE (`codes/type/`): its checks, its miner, its cases and their golden violations."""
