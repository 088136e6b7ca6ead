"""The states of an engine client (runner.play.engines' TimedUciProtocol, TimedXBoardProtocol).

``idle`` (started, between moves, or kept between games), ``thinking`` (``go`` sent, its move
not read yet), ``pondering`` (``go ponder``), ``stopping`` (``stop`` sent, its ``bestmove``
not read yet) and ``gone`` (the process exited). Only an idle engine that never sent a move
nobody asked for (``stray``) is sound to keep for another game.
"""

IDLE, THINKING, PONDERING, STOPPING, GONE = "idle", "thinking", "pondering", "stopping", "gone"
