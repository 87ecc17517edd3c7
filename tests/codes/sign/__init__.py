"""Tests of POSITIVE and NONNEG (`codes/sign/`): its checks, its miner, its cases and their golden violations."""
