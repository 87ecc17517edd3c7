"""Tests of DATE_ORDER (`codes/date_order/`): its checks, its miner, its cases and their golden violations."""
