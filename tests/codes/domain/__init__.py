"""Tests of DOMAIN (`codes/domain/`): its checks, its miner, its cases and their golden violations."""
