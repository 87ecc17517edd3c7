"""Tests of UNIQUE (`codes/unique/`): its checks, its miner, its cases and their golden violations."""
