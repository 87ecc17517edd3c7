"""Tests of CONSISTENT (`codes/consistent/`): its checks, its miner, its cases and their golden violations."""
