#!/usr/bin/env python3
"""Build books/default.pgn: varied, roughly balanced 8-12 ply opening lines.

Lines are seeded weighted random walks through Debian's gnuchess polyglot book
(package gnuchess-book, public domain). Each candidate is checked with Stockfish at a fixed
shallow depth (one thread, fixed hash, new game per position, so the result is the same on
every run with the same Stockfish build); a line is kept when |eval| <= --max-cp for White.
Variety: at most --max-per-prefix lines share their first 4 plies, no first move supplies
more than --max-first-move-share of the book, and transpositions (same final position) are
dropped. Names come from Scid's ECO classification (package scid-data) when it is installed.

    python scripts/build_book.py            # rewrites books/default.pgn
    python scripts/build_book.py --check    # rebuilds in memory, fails if the file differs
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.polyglot

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = {
    "book": "/usr/share/games/gnuchess/book.bin",
    "engine": "/usr/games/stockfish",
    "eco": "/usr/share/scid/data/scid.eco",
    "out": str(ROOT / "books" / "default.pgn"),
}


def eco_table(path: Path) -> dict[str, tuple[str, str]]:
    """Position (EPD) -> (ECO code, name) from a Scid .eco file, for lines up to 14 plies."""
    text = "\n".join(line for line in path.read_text(encoding="latin-1").splitlines()
                     if not line.lstrip().startswith("#"))
    table: dict[str, tuple[str, str]] = {}
    for match in re.finditer(r'([A-E]\d\d)[a-z]?\d*\s+"([^"]*)"\s+([^*]*)\*', text):
        code, name, movetext = match.groups()
        sans = [tok for tok in movetext.split() if not re.fullmatch(r"\d+\.+", tok)]
        sans = [re.sub(r"^\d+\.+", "", tok) for tok in sans]
        if len(sans) > 14:
            continue
        board = chess.Board()
        try:
            for san in sans:
                board.push_san(san)
        except ValueError:
            continue
        table[board.epd()] = (code, name)
    return table


def weighted_move(reader: chess.polyglot.MemoryMappedReader, board: chess.Board,
                  rng: random.Random) -> chess.Move | None:
    """A book move drawn with probability ~ sqrt(weight), ignoring moves under 2% of the best."""
    entries = list(reader.find_all(board))
    if not entries:
        return None
    top = max(entry.weight for entry in entries)
    entries = [entry for entry in entries if entry.weight * 50 >= top]
    entries.sort(key=lambda entry: entry.move.uci())  # file order must not matter
    weights = [entry.weight ** 0.5 for entry in entries]
    return rng.choices(entries, weights=weights)[0].move


def build(args: argparse.Namespace) -> tuple[str, dict[str, object]]:
    rng = random.Random(args.seed)
    eco = eco_table(Path(args.eco)) if args.eco else {}
    lines: list[tuple[list[chess.Move], int]] = []
    seen_positions: set[str] = set()
    prefixes: Counter[tuple[str, ...]] = Counter()
    first_moves: Counter[str] = Counter()
    stats = Counter()
    engine = chess.engine.SimpleEngine.popen_uci(args.engine)
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        engine_name = engine.id.get("name", Path(args.engine).name)
        with chess.polyglot.open_reader(args.book) as reader:
            while len(lines) < args.count and stats["walks"] < args.max_walks:
                stats["walks"] += 1
                target = rng.randint(args.min_plies, args.max_plies)
                board = chess.Board()
                while board.ply() < target:
                    move = weighted_move(reader, board, rng)
                    if move is None:
                        break
                    board.push(move)
                moves = list(board.move_stack)
                if len(moves) < args.min_plies or board.is_game_over():
                    stats["short"] += 1
                    continue
                key = tuple(m.uci() for m in moves[:4])
                if board.epd() in seen_positions or prefixes[key] >= args.max_per_prefix:
                    stats["duplicate"] += 1
                    continue
                if first_moves[key[0]] + 1 > args.max_first_move_share * args.count:
                    stats["first move quota"] += 1
                    continue
                info = engine.analyse(board, chess.engine.Limit(depth=args.depth), game=object())
                cp = info["score"].white().score(mate_score=100_000)
                stats["evaluated"] += 1
                if abs(cp) > args.max_cp:
                    stats["unbalanced"] += 1
                    continue
                seen_positions.add(board.epd())
                prefixes[key] += 1
                first_moves[key[0]] += 1
                lines.append((moves, cp))
    finally:
        engine.quit()

    out: list[str] = []
    for number, (moves, cp) in enumerate(lines, start=1):
        game = chess.pgn.Game()
        game.headers["Event"] = "swiss-runner default book"
        game.headers["Site"] = "gnuchess-book book.bin"
        game.headers["Round"] = str(number)
        board = chess.Board()
        name = None
        for move in moves:
            board.push(move)
            name = eco.get(board.epd(), name)
        if name:
            game.headers["ECO"] = name[0]
            opening, _, variation = name[1].partition(":")
            game.headers["Opening"] = opening.strip()
            if variation.strip():
                game.headers["Variation"] = variation.strip()
        game.headers["PlyCount"] = str(len(moves))
        game.headers["BookEval"] = f"{cp / 100:+.2f}"
        game.headers["Annotator"] = f"{engine_name} depth {args.depth}"
        game.add_line(moves)
        out.append(str(game))
    evals = [cp for _, cp in lines]
    summary = {
        "lines": len(lines), **stats,
        "first moves": dict(first_moves.most_common()),
        "mean eval cp": round(sum(evals) / max(1, len(evals)), 1),
        "max |eval| cp": max((abs(e) for e in evals), default=0),
        "engine": engine_name,
    }
    header = (f"; swiss-runner default opening book: {len(lines)} lines of {args.min_plies}-"
              f"{args.max_plies} plies.\n; Built by scripts/build_book.py --seed {args.seed} "
              f"--depth {args.depth} --max-cp {args.max_cp} from {Path(args.book).name} "
              f"(gnuchess-book) checked with {engine_name}; see books/README.md.\n\n")
    return header + "\n\n".join(out) + "\n", summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--book", default=DEFAULTS["book"], help="polyglot book to walk")
    parser.add_argument("--engine", default=DEFAULTS["engine"], help="UCI engine for the balance check")
    parser.add_argument("--eco", default=DEFAULTS["eco"] if Path(DEFAULTS["eco"]).is_file() else "",
                        help="Scid .eco file for opening names ('' = name lines by their moves)")
    parser.add_argument("--out", default=DEFAULTS["out"])
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--min-plies", type=int, default=8)
    parser.add_argument("--max-plies", type=int, default=12)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--max-cp", type=int, default=80)
    parser.add_argument("--max-per-prefix", type=int, default=3)
    parser.add_argument("--max-first-move-share", type=float, default=0.4)
    parser.add_argument("--max-walks", type=int, default=20_000)
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if --out differs")
    args = parser.parse_args(argv)
    text, summary = build(args)
    for key, value in summary.items():
        print(f"{key}: {value}", file=sys.stderr)
    if summary["lines"] < args.count:
        print(f"error: only {summary['lines']} lines found, wanted {args.count}", file=sys.stderr)
        return 1
    out = Path(args.out)
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print(f"{out}: {'up to date' if same else 'DIFFERS from a fresh build'}", file=sys.stderr)
        return 0 if same else 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
