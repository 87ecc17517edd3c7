"""Tests of ECHO (`codes/echo/`): its checks, its miner, its cases and their golden violations."""
