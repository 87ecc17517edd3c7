"""Tests of the sample world (`sample_traces/`): the generator, its committed files and what they plant."""
