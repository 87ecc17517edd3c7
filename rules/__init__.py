"""Property codes: what a rule means, below both mining and checking.

`contracts.rules.model` holds the contract set (rules, tools, fold checkers) and `contracts.rules.folds`
the task-fold assignment every checker obeys; both are read by the miner (which writes them) and by the
checker (which applies them), so they live below both.
"""
