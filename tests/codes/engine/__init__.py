"""Tests of the engine that runs the registered codes (`codes/engine/`): the generic per-call and vectorised
engine and the compiled per-call checker."""
