#!/usr/bin/env python3
"""Deterministic Chess960 UCI engine that castles on purpose (the 960 resume test).

Usage: castler960.py CASTLE_PLY DELAY_MS SALT
  Before ply CASTLE_PLY of the game it never moves a king or a rook (castling rights stay),
  never captures or checks when it can help it
  and moves its other back-rank pieces first (clearing the way);
  from then on it castles whenever castling is legal (else a hashed choice). The move depends
  only on the position, so a resumed game is the game an uninterrupted run plays.
It declares UCI_Chess960 and refuses to search (``bestmove 0000``) until it has received
``setoption name UCI_Chess960 value true``; it reads Shredder- and X-FEN castling and
answers castling king-takes-rook.
"""

from __future__ import annotations

import hashlib
import sys
import time

import chess


def choose(board: chess.Board, castle_ply: int, salt: str) -> chess.Move:
    moves = sorted(board.legal_moves, key=lambda m: m.uci())
    if board.ply() >= castle_ply:
        castles = [m for m in moves if board.is_castling(m)]
        if castles:
            return castles[0]
    quiet = [m for m in moves if board.piece_type_at(m.from_square) not in (chess.KING, chess.ROOK)
             and not board.is_capture(m) and not board.gives_check(m)]
    home = chess.BB_RANK_1 if board.turn == chess.WHITE else chess.BB_RANK_8
    developing = [m for m in quiet if chess.BB_SQUARES[m.from_square] & home
                  and not chess.BB_SQUARES[m.to_square] & home]  # clear the way
    pool = developing or quiet or moves
    digest = hashlib.sha256(f"{salt}|{board.fen()}".encode()).digest()
    return pool[int.from_bytes(digest[:4], "big") % len(pool)]


def main() -> None:
    castle_ply, delay, salt = int(sys.argv[1]), float(sys.argv[2]) / 1000, sys.argv[3]
    board = chess.Board(chess960=True)
    chess960 = False
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "uci":
            print("id name castler960\nid author tests\n"
                  "option name UCI_Chess960 type check default false\nuciok", flush=True)
        elif cmd == "setoption" and line.split() == ["setoption", "name", "UCI_Chess960",
                                                     "value", "true"]:
            chess960 = True
        elif cmd == "isready":
            print("readyok", flush=True)
        elif cmd == "position":
            if parts[1] == "startpos":
                board = chess.Board(chess960=True)
                rest = parts[2:]
            else:
                board = chess.Board(" ".join(parts[2:8]), chess960=True)
                rest = parts[8:]
            if rest and rest[0] == "moves":
                for uci in rest[1:]:
                    board.push_uci(uci)
        elif cmd == "go":
            if not chess960:
                print("bestmove 0000", flush=True)
                continue
            time.sleep(delay)
            move = choose(board, castle_ply, salt)
            print(f"info depth 1 nodes 1 score cp 0 pv {board.uci(move)}", flush=True)
            print(f"bestmove {board.uci(move)}", flush=True)
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
