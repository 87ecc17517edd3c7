"""The engine that runs registered property codes: per call (`evaluate`, `compiled`), over a corpus (`evaluate`), and per episode (`episodes`)."""
