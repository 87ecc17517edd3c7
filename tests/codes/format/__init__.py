"""Tests of FORMAT (`codes/format/`): its checks, its miner, its cases and their golden violations."""
