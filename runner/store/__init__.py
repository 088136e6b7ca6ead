"""The state of an event: the SQLite database (the truth) and the files derived from it."""
