"""Operations on the tool registry (`contracts.traces.registry` holds the model, which ingest reads
too): plan checking (`plan`), model-facing tool definitions (`export`), and proposing or checking
declared outputs against a corpus (`ops`)."""
