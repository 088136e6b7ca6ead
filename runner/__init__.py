"""swiss-runner: chess-engine tournaments with the TCEC Swiss system."""

__version__ = "0.1.0"
