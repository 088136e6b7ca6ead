"""The tournament director's withdrawals and rewinds (issue 39): what they change in the
event, applied to its store. The `td` command records a decision; the runner (or the next
`run`) calls :func:`apply_withdraw` / :func:`apply_rewind` once for it. docs/td.md says what
the TCEC rules imply and the decisions taken where they are silent.

Withdrawal (`td CONFIG withdraw ENGINE [--now]`)
    From the next pairing on, the engine is not paired; the Swiss rules go on with the
    players left (runner.domain.pairing.pair_round ``withdrawn``: with an odd number left a
    bye is given, with an even number none). Its finished games stand and it stays in the
    standings, marked withdrawn. The games it was already paired for are played (its game in
    progress finishes, and so does the second game of a double-round pair: the pair stands as
    paired), unless ``--now``: then every game of it not yet finished is lost by forfeit
    (TCEC rule 7.a counts an engine that stops playing, a crash, as a loss). A round paired
    but not started when the withdrawal is applied is paired again without the engine.
    Every game of a round paired without it carries the PGN tag ``Withdrawn`` (read by
    `audit`, which then pairs that round without those engines).

Rewind (`td CONFIG rewind --to GAME`, TCEC rule 7.e)
    Game GAME and every game after it (by game number) are voided: kept whole in the
    database (table voided_games, with their logged moves) and in ``<PGN>.voided.pgn``,
    never deleted. Rewinding to the first game of a round voids the round's pairing too, and
    the round is paired afresh; rewinding to a later game of a round keeps the round's
    pairing (made before that game) and plays the voided games of that round again, from
    their start. Every later round's pairing is voided. Withdrawals stay in force.

Both run with the event's lock held by the caller (the runner stopped, or the running
runner at a safe point): nothing else may record a game meanwhile. What each needs from a
running runner is in its docstring.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess

from runner.config.typed import Config
from runner.domain.adjudication import End
from runner.domain.events import parse_utc
from runner.domain.gamerecord import game_record
from runner.domain.interruption import played_seconds
from runner.domain.models import BLACK_WIN, WHITE_WIN, GameRecord
from runner.domain.pgn import escape_tag
from runner.errors import BadInput
from runner.service.gamespec import game_spec
from runner.store.database import Store, StoredGame
from runner.store.files import atomic_write
from runner.store.tdstore import (
    add_withdrawal,
    applied,
    mark_applied,
    move_withdrawals,
    void_games,
    void_rounds,
    voided_games,
    withdrawals,
)

FORFEIT_TERMINATION = "abandoned"
# the TD command's mark, in the transaction that applies it: then(connection, outcome)
Then = Callable[[sqlite3.Connection, str], None]


class TDRefused(BadInput):
    """A TD command that cannot apply; nothing was recorded (exit 2)."""


# --------------------------------------------------------------------------- checks


def _event(store: Store) -> None:
    if not store.has_event():
        raise TDRefused(f"{store.path}: no event has started yet: nothing to withdraw from "
                        "or rewind (run the event first)")


def _swiss_rounds_over(store: Store, config: Config) -> bool:
    rounds = [r for r in store.rounds() if not r.extra]
    return (len(rounds) >= config.swiss.rounds
            and all(r.state == "complete" for r in rounds))


def event_over(store: Store, config: Config) -> bool:
    """Every Swiss round played and every game finished, with no extra pairs to come
    (AllowExtraPairsOnTie may add some: then the event is not taken as over)."""
    return (_swiss_rounds_over(store, config) and not config.swiss.allow_extra_pairs_on_tie
            and all(g.status == "finished" for g in store.games()))


def validate_withdraw(store: Store, config: Config, engine: str) -> None:
    """Raise TDRefused when ENGINE cannot be withdrawn: not an engine of the event, already
    withdrawn, the last two engines, or the Swiss rounds are over."""
    _event(store)
    seeds = store.seeds()
    if engine not in seeds:
        raise TDRefused(f"withdraw {engine!r}: not an engine of this event (expected one of: "
                        f"{', '.join(seeds)})")
    out = {w.engine: w for w in withdrawals(store.conn)}
    if engine in out:
        raise TDRefused(f"withdraw {engine!r}: already withdrawn (decision {out[engine].decision_id}, "
                        f"from round {out[engine].from_round}: {out[engine].reason})")
    if len(seeds) - len(out) - 1 < 2:
        raise TDRefused(f"withdraw {engine!r}: only {len(seeds) - len(out)} engines are left; "
                        "an event needs at least two")
    if _swiss_rounds_over(store, config):
        raise TDRefused(f"withdraw {engine!r}: all {config.swiss.rounds} rounds are played: "
                        "there is no pairing left to leave it out of")


def validate_rewind(store: Store, config: Config, game_no: int) -> None:
    """Raise TDRefused when there is no game GAME to rewind to (before the first game, or
    past the last one scheduled), or when rewinding to it would change nothing."""
    _event(store)
    games = store.games()
    if game_no < 1:
        raise TDRefused(f"rewind --to {game_no}: game numbers start at 1 (a rewind cannot go "
                        "past the start of the event)")
    if not games or game_no > games[-1].game_id:
        last = games[-1].game_id if games else 0
        raise TDRefused(f"rewind --to {game_no}: no such game (the games scheduled are 1 to "
                        f"{last})")
    game = next(g for g in games if g.game_id == game_no)
    later = [g for g in games if g.game_id >= game_no]
    untouched = all(g.status == "scheduled" and store.attempts(g.game_id) == 0 for g in later)
    if untouched and game.game_in_round != 1:
        raise TDRefused(f"rewind --to {game_no}: game {game_no} (round {game.round}."
                        f"{game.game_in_round}) and the games after it have not started: "
                        "nothing to void")


# --------------------------------------------------------------------------- withdraw


def _next_round(store: Store) -> int:
    """The round the next pairing makes: a round paired but not started counts as not paired
    (a withdrawal pairs it again)."""
    rounds = [r for r in store.rounds() if not r.extra]
    if not rounds:
        return 1
    last = rounds[-1]
    if _untouched_round(store, last.number):
        return last.number
    return last.number + 1


def _untouched_round(store: Store, number: int) -> bool:
    return all(g.status == "scheduled" and store.attempts(g.game_id) == 0
               for g in store.games(number))


def withdraw_forfeits(store: Store, engine: str) -> list[StoredGame]:
    """The games ENGINE loses by forfeit when withdrawn with --now: its unfinished games of
    the rounds paired before the one the withdrawal applies from."""
    from_round = _next_round(store)
    return [g for g in store.games() if g.status != "finished"
            and engine in (g.white, g.black) and g.round < from_round]


def apply_withdraw(store: Store, config: Config, engine: str, now: bool, reason: str,
                   decision_id: int, then: Then | None = None,
                   forfeited: Sequence[int] | None = None) -> str:
    """Withdraw ENGINE (see the module's docstring); the outcome line for the decision log.

    Applied once per ``decision_id`` (again: the first outcome is returned, nothing changes).
    Needs from a running runner: no game being recorded meanwhile, and with ``now`` no game
    of ENGINE in progress (interrupt it first: a game left 'running' is taken as interrupted
    and forfeited). A round paired but not started is paired again: the runner must pair
    before playing on (as `run` does after a stop). Refreshes the PGN file.

    ``forfeited``: with ``now``, the games the caller has recorded already as lost by
    forfeit for this decision (the running runner: it checked the withdrawal with
    :func:`validate_withdraw`, then recorded each :func:`withdraw_forfeits` game through its
    Recorder, so the views see them); the outcome line names them. None (no runner runs:
    there is no writer thread nor views): they are recorded here, through the Store
    (:func:`record_forfeit`; the PGN file is refreshed from the store below).
    """
    done = _applied_before(store, decision_id)
    if done is not None:
        refresh_pgn_views(store, config)
        return done
    if forfeited is None:
        validate_withdraw(store, config, engine)
    from_round = _next_round(store)
    lost = list(forfeited or ())
    if now and forfeited is None:
        # each forfeit is its own commit; a crash between them is completed next time
        for game in withdraw_forfeits(store, engine):
            record_forfeit(store, config, game, engine)
            lost.append(game.game_id)
    repaired: list[int] = []
    with store.transaction() as c:
        if from_round in {r.number for r in store.rounds()}:
            repaired = void_rounds(c, from_round, decision_id, f"withdrawal of {engine}: {reason}")
        add_withdrawal(c, engine, from_round, now, decision_id, reason)
        outcome = f"{engine} withdrawn from round {from_round} on"
        if repaired:
            outcome += f" (round {from_round} paired again without it)"
        if lost:
            outcome += "; lost by forfeit: game(s) " + ", ".join(map(str, lost))
        elif now:
            outcome += "; no unfinished game to forfeit"
        else:
            unfinished = [g.game_id for g in store.games() if g.status != "finished"
                          and engine in (g.white, g.black) and g.round < from_round]
            if unfinished:
                outcome += "; still plays the game(s) already paired: " + ", ".join(
                    map(str, unfinished))
        if then is not None:  # the command's mark (runner.store.decisions.mark)
            then(c, outcome)
        else:
            mark_applied(c, decision_id, "withdraw", reason, outcome)
    problem = refresh_pgn_views(store, config)
    return outcome if problem is None else f"{outcome}; {problem}"


def _applied_before(store: Store, decision_id: int) -> str | None:
    """The outcome of the decision when it was applied already (its mark in td_commands,
    made in the transaction of its effect), None when not yet."""
    return applied(store.conn, decision_id)


def forfeits_due(store: Store, games: list[StoredGame]) -> dict[int, str]:
    """game_id -> the engine that loses it by forfeit, for the unfinished ``games`` of an
    engine withdrawn with ``--now`` (a rewind can schedule such games again)."""
    now = {w.engine for w in withdrawals(store.conn) if w.forfeit}
    if not now:
        return {}
    due: dict[int, str] = {}
    for g in games:
        if g.status != "finished" and not g.extra:
            loser = g.white if g.white in now else g.black if g.black in now else None
            if loser is not None:
                due[g.game_id] = loser
    return due


def forfeit_record(store: Store, config: Config, game: StoredGame, loser: str) -> GameRecord:
    """The record of ``game`` lost by forfeit by ``loser`` (withdrawn with --now): the moves
    it had reached (its move log) and Termination "abandoned"."""
    spec = game_spec(config, store, game)
    white_loses = loser == game.white
    side = "White" if white_loses else "Black"
    end = End(BLACK_WIN if white_loses else WHITE_WIN,
              f"{side} forfeits: {loser} was withdrawn by the tournament director",
              FORFEIT_TERMINATION, "withdrawn")
    started = store.started_event(game.game_id) or {}
    logged = store.logged_moves(game.game_id)
    board, moves, comments = _reached(spec.variant, started, logged, game)
    now = datetime.now(UTC)
    return game_record(spec, board, moves, comments, end,
                       parse_utc(started.get("start_time")) or now,
                       played_seconds(logged) if moves else None, finished=now,
                       move_data=logged if moves else None)


def _reached(variant: str, started: dict[str, Any], logged: list[dict[str, Any]],
             game: StoredGame) -> tuple[chess.Board, list[str], list[str]]:
    """(start board, moves, comments) of the game as far as it was played; a log that does
    not replay from its start is left out (the forfeit stands without moves)."""
    chess960 = variant != "standard"
    fen = started.get("start_fen") or (game.opening.fen if game.opening else None)
    try:
        board = chess.Board(fen, chess960=chess960) if fen else chess.Board(chess960=chess960)
    except ValueError:
        board = chess.Board(chess960=chess960)
    replay = board.copy()
    moves: list[str] = []
    try:
        for m in logged:
            move = chess.Move.from_uci(m["uci"])
            if move not in replay.legal_moves:
                raise ValueError(m["uci"])
            replay.push(move)
            moves.append(m["uci"])
    except (KeyError, ValueError, TypeError):
        return board, [], []
    return board, moves, [str(m.get("comment", "")) for m in logged]


def record_forfeit(store: Store, config: Config, game: StoredGame, loser: str) -> GameRecord:
    """Record ``game`` as lost by forfeit by ``loser`` through the Store, when no runner runs
    (no writer thread, no views); a running runner records it through its Recorder
    (runner.service.recording.Recorder.forfeit), as every game."""
    record = forfeit_record(store, config, game, loser)
    store.record_game(game.game_id, record)
    return record


# --------------------------------------------------------------------------- rewind


def apply_rewind(store: Store, config: Config, game_no: int, reason: str,
                 decision_id: int, then: Then | None = None) -> str:
    """Void game ``game_no`` and everything after it (see the module's docstring); the
    outcome line for the decision log. Applied once per ``decision_id``.

    Needs from a running runner: no game numbered ``game_no`` or later in progress (interrupt
    them first; a game left 'running' is voided as it stands), none being recorded
    meanwhile, and afterwards the loop goes on from the first round not complete (paired
    again when it was voided), as `run` does after a stop. Refreshes the PGN file and
    writes ``<PGN>.voided.pgn``.
    """
    done = _applied_before(store, decision_id)
    if done is not None:  # the views may not have been written (killed after the commit)
        refresh_pgn_views(store, config)
        return done
    validate_rewind(store, config, game_no)
    pgn_was_ours = _pgn_ours(store, config.pgn_out)
    game = next(g for g in store.games() if g.game_id == game_no)
    fresh = game.round if game.game_in_round == 1 else game.round + 1
    why = f"rewind to game {game_no}: {reason}"
    with store.transaction() as c:
        voided = void_games(c, game_no, decision_id, why)
        rounds = void_rounds(c, fresh, decision_id, why)
        moved = move_withdrawals(c, fresh)
        finished = sum(1 for g in voided if g["status"] == "finished")
        outcome = (f"rewound to game {game_no} (round {game.round}.{game.game_in_round}): "
                   f"{finished} finished game(s) voided, {len(voided) - finished} unfinished")
        if rounds:
            outcome += "; pairing of round(s) " + ", ".join(map(str, rounds)) + " voided"
        if game.game_in_round != 1:
            outcome += (f"; round {game.round} keeps its pairing and plays games "
                        f"{game.round}.{game.game_in_round} on again")
        if moved:
            outcome += f"; {moved} withdrawal(s) now from round {fresh}"
        if then is not None:  # the command's mark (runner.store.decisions.mark)
            then(c, outcome)
        else:
            mark_applied(c, decision_id, "rewind", reason, outcome)
    problem = refresh_pgn_views(store, config, pgn_was_ours)
    return outcome if problem is None else f"{outcome}; {problem}"


# --------------------------------------------------------------------------- PGN views


def voided_pgn_path(config: Config) -> Path:
    """``games.pgn`` -> ``games.voided.pgn`` beside it."""
    out = config.pgn_out
    return out.with_name(f"{out.stem}.voided{out.suffix or '.pgn'}")


def voided_pgn_text(store: Store) -> str:
    """The voided games that had finished, as recorded, each with tags naming the decision."""
    blocks = []
    for v in voided_games(store.conn):
        if not v.pgn:
            continue
        head, sep, rest = v.pgn.partition("\n\n")
        tags = (f'[VoidedBy "{v.decision_id}"]\n'
                f'[VoidedReason "{escape_tag(v.reason)}"]\n[VoidedAt "{v.voided}"]')
        blocks.append(f"{head.rstrip()}\n{tags}{sep}{rest.strip()}\n\n" if sep else "")
    return "".join(blocks)


def sync_voided_pgn(store: Store, config: Config) -> bool:
    """Write ``<PGN>.voided.pgn`` when it does not hold exactly the voided games (deleted, or
    a crash came between a rewind's commit and its write); True when it was written."""
    text = voided_pgn_text(store)
    if not text:
        return False
    path = voided_pgn_path(config)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write(path, text)
    return True


def _pgn_ours(store: Store, path: Path) -> bool:
    try:
        return store.pgn_matches(path)
    except OSError:
        return False


def refresh_pgn_views(store: Store, config: Config, pgn_was_ours: bool | None = None
                      ) -> str | None:
    """Rewrite the PGN file from the store (exactly the valid games) and the voided PGN.

    ``pgn_was_ours``: the file held exactly the recorded games before the change (it is
    then rewritten in place; else a file that is not ours is kept aside, as `run` does).
    A file that cannot be written is rebuilt by the next `run` (the store is the truth):
    the returned message says so (None: both written)."""
    path = config.pgn_out
    try:
        if pgn_was_ours:
            atomic_write(path, "".join(store.finished_pgns()))
        elif not store.pgn_matches(path):
            store.rebuild_pgn(path)
        path = voided_pgn_path(config)
        sync_voided_pgn(store, config)
    except OSError as exc:
        return (f"{path}: cannot write it now ({exc.strerror}); the games are safe in "
                f"{store.path} and the next run writes it")
    return None


__all__ = ["TDRefused", "apply_rewind", "apply_withdraw", "forfeit_record", "forfeits_due",
           "record_forfeit", "refresh_pgn_views", "sync_voided_pgn", "validate_rewind",
           "validate_withdraw", "voided_pgn_path", "voided_pgn_text", "withdraw_forfeits"]
