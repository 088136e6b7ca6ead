"""The tournament director (TD) in the running event: its commands checked and applied
(director.Director) by the rules of withdraw, rewind and the rest (rules)."""
