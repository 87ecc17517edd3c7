"""Tests of LENGTH (`codes/length/`): its checks, its miner, its cases and their golden violations."""
