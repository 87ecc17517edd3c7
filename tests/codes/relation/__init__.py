"""Tests of RELATION (`codes/relation/`): its checks, its miner, its cases and their golden violations."""
