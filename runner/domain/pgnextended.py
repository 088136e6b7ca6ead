"""Richer PGN (``PgnComments: extended``, ``PgnExtras: [ECO, Elo, TCEC]``).

The cutechess comment ``+0.35/16 5.1s`` stays first, so tools that read cutechess PGNs read
these too; then come the commands python-chess, lichess and ChessBase read (``[%clk]``:
the mover's clock after the move, increment included; ``[%emt]``: the time the move took;
``[%eval]``: the score from **White's** point of view in pawns, ``#N`` for mate in N moves,
with the depth after a comma), then the rest as ``key=value`` text in TCEC's spelling:
``sd`` seldepth, ``n`` nodes, ``nps``, ``tb`` tablebase hits, with ``TCEC`` in PgnExtras
``R50`` (full moves left before the fifty-move rule), ``Rd`` / ``Rr`` (plies the TCEC draw /
win rule still needs, -1000 when the rule is off), and last ``pv`` in SAN. Example::

    Nf3 {+0.35/16 5.1s, [%clk 0:01:23.4] [%emt 0:00:05.1] [%eval 0.35,16] sd=24, n=1234567,
    nps=242071, tb=0, pv=Nf3 Nc6 Bb5 a6}

Book moves keep ``{book}``. Per-move data are the game's MovePlayed events (or their JSON
form from the move log).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import chess

from runner.domain.eco import classify
from runner.domain.models import GameSpec

NO_RULE = -1000  # Rd / Rr when the rule is off (TCEC's value)


def _get(move: Any, name: str) -> Any:
    return move.get(name) if isinstance(move, Mapping) else getattr(move, name, None)


def pgn_clock(ms: int) -> str:
    """``h:mm:ss.s`` as python-chess reads it in ``[%clk]`` / ``[%emt]``."""
    tenths = max(0, int(round(ms / 100)))
    seconds, tenth = divmod(tenths, 10)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{second:02d}.{tenth}"


def _eval(move: Any, mover: chess.Color) -> str | None:
    sign = 1 if mover == chess.WHITE else -1
    mate, cp = _get(move, "mate"), _get(move, "score_cp")
    if mate is not None:
        text = f"#{sign * mate}"
    elif cp is not None:
        text = f"{sign * cp / 100:.2f}"
    else:
        return None
    depth = _get(move, "depth")
    return f"[%eval {text},{depth}]" if depth else f"[%eval {text}]"


pgn_eval = _eval  # ``[%eval 0.35,16]`` of a move (White's point of view), None without a score


def _san_pv(board: chess.Board, pv: Sequence[str]) -> str:
    pos = board.copy(stack=False)
    sans: list[str] = []
    for uci in pv:
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            break
        if move not in pos.legal_moves:
            break
        sans.append(pos.san(move))
        pos.push(move)
    return " ".join(sans)


def extended_comment(base: str, move: Any, board: chess.Board, spec: GameSpec, *,
                     extended: bool, tcec: bool) -> str:
    """The comment of one engine move; ``board`` is the position before it."""
    mover = board.turn
    parts: list[str] = []
    fields: list[str] = []
    if extended:
        clock = _get(move, "white_clock_ms" if mover == chess.WHITE else "black_clock_ms")
        if clock is not None:
            parts.append(f"[%clk {pgn_clock(clock)}]")
        if _get(move, "time_ms") is not None:
            parts.append(f"[%emt {pgn_clock(_get(move, 'time_ms'))}]")
        evaluation = _eval(move, mover)
        if evaluation:
            parts.append(evaluation)
        for key, name in (("sd", "seldepth"), ("n", "nodes"), ("nps", "nps"), ("tb", "tbhits")):
            value = _get(move, name)
            if value is not None:
                fields.append(f"{key}={value}")
    if tcec:
        after = board.copy(stack=False)
        after.push(chess.Move.from_uci(_get(move, "uci")))
        fields.append(f"R50={(101 - after.halfmove_clock) // 2}")
        adj = spec.adjudication
        draw_left = adj.tcec_draw.plies - (_get(move, "draw_plies") or 0) if adj.tcec_draw else NO_RULE
        win_left = adj.tcec_win.plies - (_get(move, "win_plies") or 0) if adj.tcec_win else NO_RULE
        fields += [f"Rd={draw_left}", f"Rr={win_left}"]
    if extended:
        pv = _get(move, "pv") or ()
        if pv:
            san = _san_pv(board, pv)
            if san:
                fields.append(f"pv={san}")
    rest = " ".join(parts)
    if fields:
        rest = f"{rest} {', '.join(fields)}".strip()
    return f"{base}, {rest}" if base and rest else (base or rest)


def enrich_comments(spec: GameSpec, start_board: chess.Board, moves: Sequence[str],
                    comments: Sequence[str], move_data: Sequence[Any]) -> list[str]:
    """The PGN comments with the extended data (and/or TCEC fields) of each engine move.

    ``move_data``: MovePlayed events (or dicts) by ply; plies without data keep their comment
    (book moves; the moves before a resume, whose comments the loop enriched from the move
    log before handing them to the backend).
    """
    extended = spec.pgn_comments == "extended"
    tcec = "TCEC" in spec.pgn_extras
    out = list(comments)
    if not (extended or tcec):
        return out
    by_ply = {_get(m, "ply"): m for m in move_data}
    board = start_board.copy(stack=False)
    for i, uci in enumerate(moves):
        data = by_ply.get(i + 1)
        if data is not None and not _get(data, "book") and _get(data, "uci") == uci:
            out[i] = extended_comment(comments[i], data, board, spec, extended=extended, tcec=tcec)
        board.push(chess.Move.from_uci(uci))
    return out


def extra_tags(spec: GameSpec, start_board: chess.Board, moves: Sequence[str]) -> dict[str, str]:
    """``ECO`` (runner.domain.eco) and ``WhiteElo`` / ``BlackElo`` (the engines' Rating)."""
    tags: dict[str, str] = {}
    if "ECO" in spec.pgn_extras:
        code = classify(start_board, moves)
        if code:
            tags["ECO"] = code
    if "Elo" in spec.pgn_extras:
        for side, engine in (("White", spec.white), ("Black", spec.black)):
            if engine.rating is not None:
                tags[f"{side}Elo"] = str(int(round(engine.rating)))
    return tags


__all__ = ["NO_RULE", "enrich_comments", "extended_comment", "extra_tags", "pgn_clock", "pgn_eval"]
