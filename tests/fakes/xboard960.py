#!/usr/bin/env python3
"""Deterministic Chess960 XBoard engine (no Debian XBoard engine plays Chess960 here).

Usage: xboard960.py CASTLE_PLY SALT
  Declares ``variants="normal,fischerandom"``; plays from ``setboard`` positions (Shredder-
  or X-FEN) only after ``variant fischerandom`` (otherwise it answers ``Illegal move`` to
  every move it is given and resigns when asked to move). Moves come as ``usermove`` in
  coordinate notation or ``O-O``/``O-O-O``; it answers ``move O-O`` when it castles, else
  coordinates. It chooses as tests/fakes/castler960.py does (castles from CASTLE_PLY on).
"""

from __future__ import annotations

import sys
from pathlib import Path

import chess

sys.path.insert(0, str(Path(__file__).resolve().parent))
from castler960 import choose  # noqa: E402


def parse(board: chess.Board, text: str) -> chess.Move:
    if text.startswith("O-O") or text.startswith("0-0"):
        return board.parse_san(text.replace("0", "O"))
    return board.parse_uci(text)


def main() -> None:
    castle_ply, salt = int(sys.argv[1]), sys.argv[2]
    board = chess.Board(chess960=True)
    fischer = False
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "protover":
            print('feature ping=1 setboard=1 usermove=1 sigint=0 myname="xboard960" '
                  'variants="normal,fischerandom" done=1', flush=True)
        elif cmd == "ping":
            print(f"pong {parts[1]}", flush=True)
        elif cmd == "new":
            board, fischer = chess.Board(chess960=True), False
        elif cmd == "variant":
            fischer = parts[1] == "fischerandom"
        elif cmd == "setboard":
            board = chess.Board(" ".join(parts[1:7]), chess960=True)
        elif cmd == "usermove":
            try:
                if not fischer:
                    raise ValueError("not in fischerandom")
                board.push(parse(board, parts[1]))
            except ValueError:
                print(f"Illegal move: {parts[1]}", flush=True)
        elif cmd == "go":
            if not fischer:
                print("resign", flush=True)
                continue
            move = choose(board, castle_ply, salt)
            text = board.san(move) if board.is_castling(move) else move.uci()
            board.push(move)
            print(f"move {text.rstrip('+#')}", flush=True)
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
