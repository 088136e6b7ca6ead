#!/usr/bin/env python3
"""Deterministic UCI engine for the orchestrator's crash tests.

Usage: det_engine.py STYLE SALT DELAY_MS
  STYLE  greedy: mate in one, else the most valuable capture, else a hashed choice;
         random: always a hashed choice.
  SALT   mixed into the hash so engines with different salts play different games.
The move depends only on the position (and salt), never on time, so a replayed game is
identical move for move. It reports the material balance as its score, so the TCEC win
rule can adjudicate lopsided games.
"""

from __future__ import annotations

import hashlib
import sys
import time

import chess

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9,
          chess.KING: 0}


def material(board: chess.Board, colour: chess.Color) -> int:
    return sum(VALUES[p.piece_type] * (1 if p.color == colour else -1)
               for p in board.piece_map().values())


def choose(board: chess.Board, style: str, salt: str) -> chess.Move:
    moves = sorted(board.legal_moves, key=lambda m: m.uci())
    if style == "greedy":
        for move in moves:
            board.push(move)
            mate = board.is_checkmate()
            board.pop()
            if mate:
                return move
        captures = [m for m in moves if board.is_capture(m)]
        if captures:
            def gain(m: chess.Move) -> int:
                victim = board.piece_at(m.to_square)
                return VALUES[victim.piece_type] if victim else 1  # en passant
            return max(captures, key=gain)
    digest = hashlib.sha256(f"{salt}|{board.fen()}".encode()).digest()
    return moves[int.from_bytes(digest[:4], "big") % len(moves)]


def main() -> None:
    style, salt, delay = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000
    board = chess.Board()
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "uci":
            print(f"id name det-{style}-{salt}\nid author tests\nuciok", flush=True)
        elif cmd == "isready":
            print("readyok", flush=True)
        elif cmd == "position":
            if parts[1] == "startpos":
                board = chess.Board()
                rest = parts[2:]
            else:
                board = chess.Board(" ".join(parts[2:8]))
                rest = parts[8:]
            if rest and rest[0] == "moves":
                for uci in rest[1:]:
                    board.push_uci(uci)
        elif cmd == "go":
            time.sleep(delay)
            move = choose(board, style, salt)
            board.push(move)
            score = material(board, not board.turn) * 100
            board.pop()
            print(f"info depth 1 nodes 1 score cp {score} pv {move.uci()}", flush=True)
            print(f"bestmove {move.uci()}", flush=True)
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
