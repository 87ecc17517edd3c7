"""Tests of REQUIRED (`codes/required/`): its checks, its miner, its cases and their golden violations."""
