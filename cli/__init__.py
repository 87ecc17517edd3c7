"""output_contracts.cli: the Typer app. Parses, calls the library, renders with rich. No logic lives here."""
