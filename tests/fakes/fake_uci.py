#!/usr/bin/env python3
"""Fault-injecting fake UCI engine for the referee tests.

Plays the first legal move (sorted by UCI text) with ``info depth 1 score cp 0``, and
misbehaves on request; ``go`` numbers count from 1 in each game (reset by ucinewgame).

  --crash-at-start        exit(1) before answering ``uci``
  --handshake-delay S     sleep S seconds before ``uciok``
  --newgame-delay S       sleep S seconds on ``ucinewgame`` (like clearing a big hash), so the
                          ``readyok`` after it comes S seconds late
  --crash-on-go N         os._exit(1) on the Nth ``go``
  --hang-on-go N          never answer the Nth ``go`` (and ignore ``stop``/``quit``)
  --sleep-on-go N S       sleep S seconds on the Nth ``go``, then answer
  --illegal-on-go N MOVE  answer ``bestmove MOVE`` on the Nth ``go``
  --garbage               print junk lines around every answer (moves stay legal)
  --spawn-child TOKEN     start a sleeping child process whose command line holds TOKEN
  --escape                that child in a session of its own (out of the engine's process
                          group: found only by its owner token)
  --score CP              report this score instead of 0
  --mate N                report ``score mate N`` instead of a cp score
  --log FILE              append every command received to FILE
  --ignore-nodes          search a ``go nodes N`` (without depth/movetime/clocks) until
                          ``stop``, as Debian's toga2 does
  --kill-parent-on-go N   SIGKILL its parent process (a cluster worker) on the Nth ``go``
  --slow-quit S           sleep S seconds on ``quit`` before exiting (a big hash to free)
  --die-on-setoption NAME exit(3) when the option NAME is set (a value it cannot take)
  --junk-handshake        answer ``uci`` with junk lines and never ``uciok`` (not an engine)
  --bad-option            declare an option whose ``min`` is not a number (python-chess logs
                          the parse error with its traceback)
  --ponder MODE           answer ``bestmove M ponder P`` (P: the opponent's first legal move
                          after M with ``right``, its last with ``wrong`` and ``deaf``); a ``go ponder``
                          search answers only on ``ponderhit`` or ``stop`` (``deaf``: never
                          on ``stop``)
  --think S               sleep S seconds before every answer (after ``go`` or ``ponderhit``)
"""

import argparse
import os
import signal
import subprocess
import sys
import time

import chess


def send(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def parse_position(tokens: list[str]) -> chess.Board:
    board = chess.Board()
    i = 1
    if i < len(tokens) and tokens[i] == "startpos":
        i += 1
    elif i < len(tokens) and tokens[i] == "fen":
        board = chess.Board(" ".join(tokens[i + 1:i + 7]))
        i += 7
    if i < len(tokens) and tokens[i] == "moves":
        for m in tokens[i + 1:]:
            board.push_uci(m)
    return board


def _bestmove(board: chess.Board, move: chess.Move, ponder: str | None) -> str:
    """``bestmove MOVE``, with ``ponder`` the opponent's first (or last) legal reply."""
    if ponder is None:
        return "bestmove " + move.uci()
    after = board.copy()
    after.push(move)
    replies = sorted(after.legal_moves, key=lambda m: m.uci())
    if not replies:
        return "bestmove " + move.uci()
    reply = replies[-1] if ponder in ("wrong", "deaf") else replies[0]
    return f"bestmove {move.uci()} ponder {reply.uci()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--crash-at-start", action="store_true")
    ap.add_argument("--slow-quit", type=float, default=0.0)
    ap.add_argument("--die-on-setoption", default=None)
    ap.add_argument("--junk-handshake", action="store_true")
    ap.add_argument("--kill-parent-on-go", type=int, default=0)
    ap.add_argument("--handshake-delay", type=float, default=0.0)
    ap.add_argument("--newgame-delay", type=float, default=0.0)
    ap.add_argument("--crash-on-go", type=int, default=0)
    ap.add_argument("--hang-on-go", type=int, default=0)
    ap.add_argument("--sleep-on-go", nargs=2, default=None)
    ap.add_argument("--illegal-on-go", nargs=2, default=None)
    ap.add_argument("--garbage", action="store_true")
    ap.add_argument("--spawn-child", default=None)
    ap.add_argument("--escape", action="store_true")
    ap.add_argument("--score", type=int, default=0)
    ap.add_argument("--mate", type=int, default=None)
    ap.add_argument("--log", default=None, help="append every command received to this file")
    ap.add_argument("--ignore-nodes", action="store_true")
    ap.add_argument("--bad-option", action="store_true")
    ap.add_argument("--ponder", choices=("right", "wrong", "deaf", "right-deaf"), default=None,
                    help="deaf: never answers stop; right-deaf: guesses right, never answers stop")
    ap.add_argument("--think", type=float, default=0.0)
    ap.add_argument("--extra-bestmove", type=int, default=0,
                    help="on this go, a second bestmove right after the first, in the same write "
                         "(nobody asked)")
    opts = ap.parse_args()
    if opts.crash_at_start:
        sys.exit(1)
    if opts.spawn_child:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", opts.spawn_child],
                         start_new_session=opts.escape)
    board = chess.Board()
    gos = 0
    until_stop: str | None = None  # the move of a search that ends only on "stop"
    pondering: str | None = None  # the move of a "go ponder" search (ponderhit or stop)
    for raw in sys.stdin:
        tokens = raw.split()
        if not tokens:
            continue
        cmd = tokens[0]
        if opts.log:
            with open(opts.log, "a") as log:
                log.write(raw)
        if opts.garbage:
            send(f"\x07 ??? garbage {gos} ###")
        if cmd == "uci" and opts.junk_handshake:
            send("Welcome to NotAnEngine 1.0 -- type help")
            send("unknown command: uci " + "x" * 400)
        elif cmd == "uci":
            time.sleep(opts.handshake_delay)
            send("id name FakeUci")
            send("id author tests")
            send("option name Hash type spin default 16 min 1 max 1024")
            if opts.bad_option:
                send("option name Contempt type spin default 0 min x max 100")
            send("uciok")
        elif cmd == "setoption" and opts.die_on_setoption and opts.die_on_setoption in tokens:
            sys.exit(3)
        elif cmd == "isready":
            send("readyok")
        elif cmd == "ucinewgame":
            time.sleep(opts.newgame_delay)
            gos = 0
        elif cmd == "position":
            board = parse_position(tokens)
        elif cmd == "go" and "ponder" in tokens:
            pondering = sorted(board.legal_moves, key=lambda m: m.uci())[0].uci()
        elif cmd == "ponderhit" and pondering is not None:
            time.sleep(opts.think)
            send(f"info depth 2 score cp {opts.score} nodes 2 pv {pondering}")
            send(_bestmove(board, chess.Move.from_uci(pondering), opts.ponder))
            pondering = None
        elif cmd == "stop" and pondering is not None:
            if opts.ponder not in ("deaf", "right-deaf"):
                send("bestmove " + pondering)
            pondering = None
        elif cmd == "go":
            gos += 1
            if gos == opts.kill_parent_on_go:
                os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(opts.think)
            if gos == opts.crash_on_go:
                os._exit(1)
            if gos == opts.hang_on_go:
                while True:
                    time.sleep(1)
            if opts.sleep_on_go and gos == int(opts.sleep_on_go[0]):
                time.sleep(float(opts.sleep_on_go[1]))
            if opts.illegal_on_go and gos == int(opts.illegal_on_go[0]):
                send("bestmove " + opts.illegal_on_go[1])
                continue
            move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
            if opts.ignore_nodes and "nodes" in tokens and not {"depth", "movetime", "wtime"} & set(tokens):
                until_stop = move.uci()
                continue
            score = f"mate {opts.mate}" if opts.mate is not None else f"cp {opts.score}"
            send(f"info depth 1 score {score} nodes 1 pv {move.uci()}")
            if opts.garbage:
                send("info garbage string with depth x")
                send("bestmovez nonsense")
            if gos == opts.extra_bestmove:  # one write: nothing can come between the two
                send(_bestmove(board, move, opts.ponder) + "\nbestmove " + move.uci())
            else:
                send(_bestmove(board, move, opts.ponder))
        elif cmd == "stop" and until_stop is not None:
            send("bestmove " + until_stop)
            until_stop = None
        elif cmd == "quit":
            time.sleep(opts.slow_quit)
            break


if __name__ == "__main__":
    main()
