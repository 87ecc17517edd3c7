"""Tests of CONDITIONAL (`codes/conditional/`): its checks, its miner, its cases and their golden violations."""
