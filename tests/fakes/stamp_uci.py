#!/usr/bin/env python3
"""A UCI engine that records its own thinking time (tests/test_pipes.py).

For every ``go`` it appends one line to FILE: ``<go read> <bestmove written>``, the
CLOCK_MONOTONIC times (``time.monotonic()``, the runner's clock too) at which its read of
the ``go`` line returned and just before its write of the ``bestmove`` line. In between it
"thinks" for a while, printing ``info`` lines one write each: ``--lines N`` of them (default
12), ``info depth K seldepth K score cp S nodes M nps 1000 tbhits 0 hashfull 0 pv MOVE``,
with S = 10 * K and M = 100 * go number + K, spread over ``--think MS`` milliseconds (default
20). It plays the legal move (sorted by UCI text) at 7 x plies so far, modulo their number.

  --stamps FILE        where the stamps go (required)
  --die-mid-move N     on the Nth ``go``: write half an info line (no newline) and exit(3)
"""

import argparse
import os
import time

import chess


def position(tokens: list[str]) -> chess.Board:
    board = chess.Board()
    if "fen" in tokens:
        at = tokens.index("fen")
        board = chess.Board(" ".join(tokens[at + 1:at + 7]))
    if "moves" in tokens:
        for move in tokens[tokens.index("moves") + 1:]:
            board.push_uci(move)
    return board


def write(data: bytes) -> None:
    """One write() per call: each line its own read for the runner."""
    while data:
        data = data[os.write(1, data):]


def lines():  # noqa: ANN201
    """stdin's lines, each with the time the read holding its end returned."""
    pending = b""
    while True:
        chunk = os.read(0, 65536)
        read_at = time.monotonic()
        if not chunk:
            return
        pending += chunk
        *whole, pending = pending.split(b"\n")
        for line in whole:
            yield line, read_at


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stamps", required=True)
    ap.add_argument("--lines", type=int, default=12)
    ap.add_argument("--think", type=float, default=20.0)
    ap.add_argument("--die-mid-move", type=int, default=0)
    args = ap.parse_args()
    stamps = open(args.stamps, "a", buffering=1)  # noqa: SIM115 - for the process's life
    board = chess.Board()
    gos = 0
    for raw, read_at in lines():
        tokens = raw.decode().split()
        if not tokens:
            continue
        command = tokens[0]
        if command == "uci":
            write(b"id name StampEngine\nid author tests\nuciok\n")
        elif command == "isready":
            write(b"readyok\n")
        elif command == "position":
            board = position(tokens)
        elif command == "go":
            gos += 1
            legal = sorted(board.legal_moves, key=lambda m: m.uci())
            move = legal[7 * len(board.move_stack) % len(legal)].uci()  # no early repetition
            if gos == args.die_mid_move:
                write(b"info depth 1 score c")
                os._exit(3)
            step = args.think / 1000 / max(args.lines, 1)
            for k in range(1, args.lines + 1):
                time.sleep(step)
                write(f"info depth {k} seldepth {k} score cp {10 * k} nodes {100 * gos + k} "
                          f"nps 1000 tbhits 0 hashfull 0 pv {move}\n".encode())
            line = f"bestmove {move}\n".encode()
            written_at = time.monotonic()
            write(line)
            stamps.write(f"{read_at:.9f} {written_at:.9f}\n")
        elif command == "quit":
            return


if __name__ == "__main__":
    main()
