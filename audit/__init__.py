"""The audit: cross-fitted replay of a corpus through its own fold checkers, with fire events frozen in a
ledger before labels are joined (`pipeline`), the statistics and intervals (`stats`), the reports
(`report`), fault injection to measure detection (`inject`), and what each rule rests on (`heldout`)."""
