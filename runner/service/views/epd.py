"""The EPD sink (EpdOut): each finished game's final position, one line a game."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

from runner.domain.events import GameEvent, GameFinished
from runner.domain.variant import board_at
from runner.errors import print_error as err


def final_fen(start_fen: str | None, moves: list[str]) -> str:
    board = board_at(start_fen)
    for uci in moves:
        board.push_uci(uci)
    return board.fen()


class EpdSink:
    """``EpdOut``: the final position of every finished game, one FEN a line, appended as
    each game ends (cutechess-cli's ``-epdout``). The position (the game replayed) and the
    write are made on a thread of the sink's own, in the order the games ended, never on
    the event loop; :meth:`close` waits for them."""

    moves = False

    def __init__(self, path: Path):
        self.path = path
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None

    def handle(self, event: GameEvent) -> None:
        if not isinstance(event, GameFinished):
            return
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="epd")
        r = event.record
        self._thread.submit(self._append, event.game_id, r.start_fen, list(r.moves))

    def _append(self, game_id: int, start_fen: str | None, moves: list[str]) -> None:
        try:
            position = final_fen(start_fen, moves)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(position + "\n")
        except OSError as exc:
            err(f"{self.path}: cannot append the final position of game {game_id} "
                f"({exc.strerror}); the game is recorded")
        except Exception as exc:  # noqa: BLE001 - a view never costs the event
            err(f"{self.path}: the final position of game {game_id} was not written "
                f"({type(exc).__name__}: {exc}); the game is recorded")

    def close(self) -> None:
        """Wait for the positions still to be written."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None


__all__ = ["EpdSink", "final_fen"]
