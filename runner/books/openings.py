"""Opening books (PGN, EPD, polyglot) and the persisted assignment of openings to matches.

A book is read into a list of :class:`runner.domain.models.Opening` (``index`` = position in that
list). The orchestrator draws :func:`opening_order` once from the tournament seed, stores it
with the tournament state and asks :func:`opening_for_match` for the opening of the n-th
match of the event, so a resumed tournament gives every match the opening it would have had.
Both games of a match use the same opening, colours reversed.
"""

from __future__ import annotations

import hashlib
import io
import logging
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import chess
import chess.pgn

from runner.books.positions960 import position_numbers, positions_book
from runner.config.typed import Config, OpeningsConfig
from runner.domain.models import Opening
from runner.domain.pgn import QuietGameBuilder, read_game
from runner.domain.variant import board_at, is_960, start_problem

LOG = logging.getLogger("runner.books.openings")

# How many distinct lines a polyglot walk produces at most, and when it gives up.
POLYGLOT_LINES = 1000
POLYGLOT_MAX_WALKS = 20_000
POLYGLOT_MAX_DUPLICATES_IN_A_ROW = 300


class BookError(Exception):
    """An opening book cannot be used; ``problems`` lists each problem (file, line/game, token)."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


# --------------------------------------------------------------------------- loading


def load_book(config: OpeningsConfig, random_seed: int = 0) -> list[Opening]:
    """Read the configured book; raise :class:`BookError` naming the file and line/game.

    ``random_seed`` only matters for polyglot books, whose lines are drawn by a seeded
    weighted random walk (same seed and book file -> same lines in the same order).
    """
    openings, problems = _read_book(config, random_seed)
    if problems:
        raise BookError(problems)
    return openings


def check_book(config: OpeningsConfig, random_seed: int = 0, *, matches: int | None = None,
               unique_per_match_only: bool = True) -> list[str]:
    """Problems found in the configured book (empty when it can be used).

    With ``matches`` (see :func:`event_matches`) the size is checked as ``run`` checks it:
    with ``unique_per_match_only=False`` the book must hold an opening for every match.
    """
    if config.file is None:  # numbered starts, each checked by the loader: only how many
        size, problems = len(position_numbers(config, random_seed)), []
    else:
        openings, problems = _read_book(config, random_seed)
        size = len(openings)
    if not problems and matches is not None:
        try:
            check_book_size(size, matches, unique_per_match_only,
                            config.file or "Openings.Positions")
        except BookError as exc:
            problems = list(exc.problems)
    return problems


def _read_book(config: OpeningsConfig, random_seed: int) -> tuple[list[Opening], list[str]]:
    if config.file is None:  # Openings.Positions: numbered Chess960 starts
        return positions_book(config, random_seed), []
    path = Path(config.file)
    if config.format == "polyglot":
        return _read_polyglot(path, config.plies, random_seed)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        return [], [f"{path}: cannot read opening book: {exc.strerror or exc}"]
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        return [], [f"{path}:{line}: not UTF-8 text (byte {exc.start}): is this really a "
                    f"{config.format} book?"]
    if config.format == "epd":
        openings, problems = _read_epd(path, text, config.variant)
    elif config.format == "pgn":
        openings, problems = _read_pgn(path, text, config.plies, config.variant)
    else:
        return [], [f"{path}: unknown book format {config.format!r}, expected pgn | epd | polyglot"]
    if not openings and not problems:
        problems.append(f"{path}: the opening book is empty (no {config.format.upper()} "
                        f"{'positions' if config.format == 'epd' else 'games'} found)")
    return openings, problems


def _position_problem(board: chess.Board, variant: str = "standard") -> str | None:
    """Why a start position cannot be played (in an event of ``variant``), or None."""
    wrong = start_problem(board, variant)
    if wrong:
        return wrong
    if not board.is_valid():
        flags = [name.lower().removeprefix("status_").replace("_", " ")
                 for name, flag in chess.Status.__members__.items()
                 if flag and flag in board.status() and name != "VALID"]
        return "invalid position (" + ", ".join(flags) + ")"
    outcome = board.outcome(claim_draw=False)
    if outcome is not None:
        return f"the game is already over ({outcome.termination.name.lower().replace('_', ' ')})"
    return None


# ---- EPD

# A full FEN line (with the halfmove clock and fullmove number), as many books and
# cutechess accept, optionally followed by EPD opcodes: "<4 fields> 0 1 [; ][id ...;]".
_FEN_COUNTERS = re.compile(r"^(\S+\s+\S+\s+\S+\s+\S+)\s+(\d+)\s+(\d+)\s*;?(?:\s+(.*))?$")


def _counters_as_opcodes(line: str) -> str:
    """``line`` with FEN's two counters written as the EPD opcodes ``hmvc``/``fmvn``."""
    match = _FEN_COUNTERS.match(line)
    if match is None:
        return line
    fields, halfmove, fullmove, rest = match.groups()
    return f"{fields} hmvc {halfmove}; fmvn {fullmove};" + (f" {rest}" if rest else "")



def _read_epd(path: Path, text: str, variant: str = "standard") -> tuple[list[Opening], list[str]]:
    openings: list[Opening] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            board, ops = chess.Board.from_epd(_counters_as_opcodes(line),
                                              chess960=is_960(variant))
        except ValueError as exc:
            shown = line if len(line) <= 80 else line[:77] + "..."
            problems.append(f"{path}:{number}: invalid EPD {shown!r}: {exc}")
            continue
        problem = _position_problem(board, variant)
        if problem:
            problems.append(f"{path}:{number}: {problem}: {board.epd()!r}")
            continue
        name = ops.get("id")
        openings.append(Opening(
            index=len(openings),
            name=str(name) if name else f"{path.name} line {number}",
            fen=board.fen(),
        ))
    return openings, problems


# ---- PGN

# What may appear in PGN movetext; anything else is reported instead of silently skipped
# (python-chess's reader is lenient: it reads "Nf6x" as "Nf6" and skips words it does not know).
_TOKEN = re.compile(r"\{[^}]*\}?|;[^\n]*|[^\s{;]+")
_SAN = re.compile(
    r"(?:[NBRQK][a-h]?[1-8]?x?[a-h][1-8]|[a-h](?:x[a-h])?[1-8](?:=?[NBRQ])?|O-O(?:-O)?|0-0(?:-0)?|--|Z0)"
    r"[+#]?[!?]{0,2}"
)
_MOVE_NUMBER = re.compile(r"\d+\.*")
_RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}
_ANNOTATION = re.compile(r"\$\d+|[!?]{1,2}")


def _scan_movetext(movetext: str) -> Iterator[tuple[bool, str, int, int, bool]]:
    """Yield (is_san, token, char offset, 1-based ply, in a variation) for moves and bad tokens."""
    plies = [0]  # plies played so far, per variation depth
    for match in _TOKEN.finditer(movetext):
        token = match.group(0)
        if token[0] in "{;":
            if token[0] == "{" and not token.endswith("}"):
                yield False, token[:20].rstrip(), match.start(), plies[-1] + 1, len(plies) > 1
            continue
        # Split glued tokens such as "1.e4", "(2.Nf3" or "Nf3)".
        for part in re.finditer(r"\(|\)|\d+\.+|[^()\s]+?(?=\(|\)|$)|[^()\s]+", token):
            text = part.group(0)
            if text == "(":
                plies.append(plies[-1] - 1)
            elif text == ")":
                if len(plies) > 1:
                    plies.pop()
            elif _MOVE_NUMBER.fullmatch(text) or text in _RESULTS or _ANNOTATION.fullmatch(text):
                continue
            else:
                is_san = _SAN.fullmatch(text) is not None
                if is_san:
                    plies[-1] += 1
                yield (is_san, text, match.start() + part.start(),
                       plies[-1] if is_san else plies[-1] + 1, len(plies) > 1)


class _MoveError(Exception):
    """A move the PGN reader rejected, with the token and the ply it was meant for."""

    def __init__(self, token: str, ply: int, in_variation: bool, error: Exception):
        super().__init__(str(error))
        self.token, self.ply, self.in_variation, self.error = token, ply, in_variation, error


class _BookGameBuilder(QuietGameBuilder):
    """Records which token failed (and at which ply) instead of logging the error."""

    def begin_game(self) -> None:
        super().begin_game()
        self._current: tuple[str, int] = ("", 0)

    def begin_parse_san(self, board: chess.Board, san: str):  # type: ignore[no-untyped-def]
        self._current = (san, len(board.move_stack) + 1)
        return super().begin_parse_san(board, san)

    def handle_error(self, error: Exception) -> None:
        if isinstance(error, chess.IllegalMoveError | chess.InvalidMoveError | chess.AmbiguousMoveError):
            in_variation = len(self.variation_stack) > 1
            error = _MoveError(*self._current, in_variation, error)
        self.game.errors.append(error)


def _game_name(headers: chess.pgn.Headers) -> str:
    opening = headers.get("Opening", "").strip()
    variation = headers.get("Variation", "").strip()
    eco = headers.get("ECO", "").strip()
    name = ": ".join(part for part in (opening, variation) if part and part != "?")
    if eco and eco != "?":
        name = f"{eco} {name}".strip()
    return name


def _read_pgn(path: Path, text: str, plies: int,
              variant: str = "standard") -> tuple[list[Opening], list[str]]:
    """The opening lines of a PGN book's ``text``, and a problem (file:line, game, ply) for
    each game that cannot be one."""
    openings: list[Opening] = []
    problems: list[str] = []
    handle = io.StringIO(text)
    number = 0
    while True:
        start = handle.tell()
        game = read_game(handle, _BookGameBuilder)
        if game is None:
            break
        number += 1
        opening = _book_line(_BookGame(path, text, start, handle.tell(), number, game, problems),
                             plies, variant, len(openings))
        if opening is not None:
            openings.append(opening)
    return openings, problems


class _BookGame:
    """One game of a PGN book being read: where it is in the file, and its problem reporter."""

    def __init__(self, path: Path, text: str, start: int, end: int, number: int,
                 game: chess.pgn.Game, problems: list[str]):
        self.path, self.text, self.start, self.number, self.game = path, text, start, number, game
        self.problems = problems
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())  # line of the game's first non-blank character
        self.first_line = text.count("\n", 0, start + lead) + 1
        self.name = _game_name(game.headers)
        self.where = f"game {number}" + (f' ("{self.name}")' if self.name else "")
        fen_at = re.search(r"^\s*\[\s*FEN\s", raw, re.MULTILINE)
        self.fen_line = text.count("\n", 0, start + fen_at.end()) + 1 if fen_at else self.first_line
        # Movetext = everything after the header block (tags, blank and comment lines).
        self.movetext_at = 0
        for m in re.finditer(r"[^\n]*\n?", raw):
            stripped = m.group(0).strip()
            if stripped and not stripped.startswith(("[", ";", "%")):
                self.movetext_at = m.start()
                break
            self.movetext_at = m.end()
        self.scanned = list(_scan_movetext(raw[self.movetext_at:]))

    def problem(self, message: str, line: int | None = None) -> None:
        sep = ", " if message.startswith("ply ") else ": "  # game 3 ("x"), ply 5: ...
        self.problems.append(f"{self.path}:{line or self.first_line}: {self.where}{sep}{message}")

    def line_of(self, offset: int) -> int:
        """The file's line of the movetext's character ``offset``."""
        return self.text.count("\n", 0, self.start + self.movetext_at + offset) + 1


def _book_line(book: _BookGame, plies: int, variant: str, index: int) -> Opening | None:
    """The game as an opening line (numbered ``index``), or None after reporting why not."""
    if _syntax_problem(book) or _read_problem(book) or _variant_problem(book, variant):
        return None
    read = _start_and_moves(book, variant)
    if read is None:
        return None
    board, moves, fen = read
    if plies:
        moves = moves[:plies]
    if not moves and fen is None:
        book.problem("no moves and no FEN: not an opening line")
        return None
    null = next((ply for ply, move in enumerate(moves, start=1) if not move), None)
    if null is not None:
        book.problem(f"ply {null}: null move '--' cannot be a book move")
        return None
    for move in moves:
        board.push(move)
    # Like cutechess-cli, a line whose last move ends the game loses that move, so the
    # engines have something to play.
    while moves and board.outcome(claim_draw=False) is not None:
        moves.pop()
        board.pop()
    if not moves and fen is None:
        book.problem("no moves left once the move that ends the game is dropped")
        return None
    name = book.name
    if not name:  # the moves' SAN (a third of the reading time: only when needed)
        name = _start_of(board).variation_san(moves) if moves else ""
    return Opening(index=index, name=name or f"{book.path.name} game {book.number}", fen=fen,
                   moves=tuple(move.uci() for move in moves))


def _syntax_problem(book: _BookGame) -> bool:
    """Report the first token of the movetext that is no move (True when there is one)."""
    bad = next((item for item in book.scanned if not item[0]), None)
    if bad is None:
        return False
    _, token, offset, ply, in_variation = bad
    if token.startswith("{"):
        book.problem(f"comment {token}... is never closed (missing '}}')", book.line_of(offset))
    elif token.startswith("["):
        book.problem(f"tag {token}...] among the moves: games must be separated by a blank "
                     f"line (after the moves, before the next game's tags)", book.line_of(offset))
    else:
        book.problem(f"ply {ply}{' (in a variation)' if in_variation else ''}: "
                     f"illegal move {token!r} (not a move in SAN)", book.line_of(offset))
    return True


def _read_problem(book: _BookGame) -> bool:
    """Report the first error python-chess met reading the game (True when there is one)."""
    game = book.game
    if not game.errors:
        return False
    error = game.errors[0]
    if isinstance(error, _MoveError):
        reason = str(error.error).split(":")[0]  # "illegal san", "ambiguous san", ...
        offset = next((item[2] for item in book.scanned if item[1] == error.token
                       and item[3] == error.ply and item[4] == error.in_variation), None)
        book.problem(f"ply {error.ply}{' (in a variation)' if error.in_variation else ''}: "
                     f"illegal move {error.token!r} ({reason})",
                     book.first_line if offset is None else book.line_of(offset))
    elif "FEN" in game.headers:
        book.problem(f"unparsable FEN {game.headers['FEN']!r}: {error}", book.fen_line)
    else:
        book.problem(str(error))
    return True


def _variant_problem(book: _BookGame, variant: str) -> bool:
    """Report a game of a variant the event does not play (True when it is one)."""
    headers = book.game.headers
    if headers.variant() is chess.Board and not (headers.is_chess960() and not is_960(variant)):
        return False
    book.problem(f"variant {headers.get('Variant', 'chess960')!r} is not supported "
                 + ("(Chess960 only)" if is_960(variant) else
                    "(standard chess only; set Variant: chess960 for Chess960 games)"))
    return True


def _start_and_moves(book: _BookGame, variant: str
                     ) -> tuple[chess.Board, list[chess.Move], str | None] | None:
    """(the start position, the moves, the start's FEN or None for the standard start), or
    None after reporting a move illegal in Chess960 or a start that cannot be played."""
    game = book.game
    board = game.board()
    moves = list(game.mainline_moves())
    if is_960(variant) and not board.chess960:
        # no Variant tag: the start's castling rights read as Chess960 ones, the moves
        # (castling in the standard form) converted to king-takes-rook
        board = board_at(game.headers.get("FEN"), True)
        replay, read = board.copy(), []
        try:
            for move in moves:
                read.append(replay.parse_uci(move.uci()) if move else move)
                replay.push(read[-1])
        except ValueError:
            book.problem(f"ply {len(read) + 1}: illegal move {move.uci()!r} in Chess960 "
                         "(add the tag [Variant \"Chess960\"])", book.fen_line)
            return None
        moves = read
    fen = board.fen() if "FEN" in game.headers else None
    if fen is None and is_960(variant):  # Chess960 position 518 (the standard start)
        board = chess.Board(chess960=True)
        fen = board.fen()
    if fen is not None:
        bad_position = _position_problem(board, variant)
        if bad_position:
            book.problem(f"FEN {game.headers['FEN']!r}: {bad_position}", book.fen_line)
            return None
    return board, moves, fen


# ---- polyglot


def _read_polyglot(path: Path, plies: int, random_seed: int) -> tuple[list[Opening], list[str]]:
    if plies <= 0:
        return [], [f"{path}: Plies: a polyglot book needs a positive number of plies to walk"]
    try:
        size = path.stat().st_size
    except OSError as exc:
        return [], [f"{path}: cannot read opening book: {exc.strerror or exc}"]
    if size == 0:
        return [], [f"{path}: the opening book is empty (0 bytes)"]
    if size % 16:
        return [], [f"{path}: not a polyglot book: {size} bytes is not a multiple of the "
                    f"16-byte entry size (truncated or another format?)"]
    rng = random.Random(f"swiss-runner polyglot {random_seed}")
    seen: set[tuple[str, ...]] = set()
    openings: list[Opening] = []
    import chess.polyglot  # late: only a polyglot book needs it (not every start of a run)

    try:
        with chess.polyglot.open_reader(path) as reader:
            if reader.get(chess.Board()) is None:
                return [], [f"{path}: the polyglot book has no move for the start position "
                            f"(empty, or not a polyglot book)"]
            duplicates = 0
            for _ in range(POLYGLOT_MAX_WALKS):
                board = chess.Board()
                while board.ply() < plies and not board.is_game_over():
                    try:
                        board.push(reader.weighted_choice(board, random=rng).move)
                    except IndexError:
                        break  # the book ends here: keep the shorter line
                key = tuple(move.uci() for move in board.move_stack)
                if key in seen:
                    duplicates += 1
                    if duplicates >= POLYGLOT_MAX_DUPLICATES_IN_A_ROW:
                        break
                    continue
                duplicates = 0
                if board.is_game_over():
                    continue
                seen.add(key)
                openings.append(Opening(
                    index=len(openings),
                    name=chess.Board().variation_san(board.move_stack),
                    moves=key,
                ))
                if len(openings) >= POLYGLOT_LINES:
                    break
    except OSError as exc:
        return [], [f"{path}: cannot read opening book: {exc.strerror or exc}"]
    return openings, []


# --------------------------------------------------------------------------- assignment


def opening_order(count: int, order: str, random_seed: int) -> list[int]:
    """The order in which book openings are handed to matches: drawn once, then persisted.

    ``sequential`` is the book order; ``random`` is a permutation derived only from
    ``random_seed`` (the same on every machine and Python 3 version).
    """
    if count < 0:
        raise ValueError(f"opening count must be >= 0, got {count}")
    indices = list(range(count))
    if order == "sequential":
        return indices
    if order != "random":
        raise ValueError(f"opening order {order!r}: expected sequential | random")
    random.Random(f"swiss-runner openings {random_seed}").shuffle(indices)
    return indices


_WRAP_LOGGED: set[tuple[int, int, int]] = set()


def opening_for_match(
    order: Sequence[int], match_index: int, book: Sequence[Opening], *, repeat: bool = True
) -> Opening:
    """Opening of the ``match_index``-th match of the event (0-based, schedule order).

    Both games of the match use it (colours reversed). When every opening has been used the
    order wraps around (logged once); with ``repeat=False`` (``UniquePerMatchOnly: false``:
    no opening may be played in two matches) that is a :class:`BookError` instead.
    """
    if not order or not book:
        raise BookError(["the opening book is empty: no opening for any match"])
    if len(order) != len(book):
        raise BookError([f"the stored opening order has {len(order)} entries but the book has "
                         f"{len(book)} openings: the book changed since the tournament started"])
    if match_index < 0:
        raise ValueError(f"match_index must be >= 0, got {match_index}")
    if match_index >= len(order):
        if not repeat:
            raise BookError([f"match {match_index + 1} needs a new opening but the book has only "
                             f"{len(book)} and UniquePerMatchOnly is false (no opening may "
                             f"repeat): use a bigger book or UniquePerMatchOnly: true"])
        key = (len(order), hash(tuple(order)), id(book))
        if key not in _WRAP_LOGGED:
            _WRAP_LOGGED.add(key)
            LOG.warning("opening book exhausted: all %d openings used after %d matches; "
                        "starting again from the first one in the order", len(book), match_index)
    index = order[match_index % len(order)]
    if not 0 <= index < len(book):
        raise BookError([f"the stored opening order refers to opening {index}, but the book has "
                         f"only {len(book)}: the book changed since the tournament started"])
    return book[index]


def matches_needed(players: int, rounds: int, extra_pairs: int = 0) -> int:
    """Matches (= openings) a Swiss event plays at most: one per pair per round (+ extra pairs)."""
    return rounds * (players // 2) + extra_pairs


def event_matches(config: Config) -> int:
    """Matches the configured event plays at most (extra tie-break pairs included)."""
    s = config.swiss
    return matches_needed(len(config.engines), s.rounds,
                          s.max_extra_pairs if s.allow_extra_pairs_on_tie else 0)


def check_book_size(
    book_size: int, matches: int, unique_per_match_only: bool, book_file: Path | str = "book"
) -> None:
    """Refuse before play a book that would have to repeat openings when that is not allowed."""
    if not unique_per_match_only and book_size < matches:
        raise BookError([f"{book_file}: {book_size} openings for up to {matches} matches, but "
                         f"UniquePerMatchOnly is false so no opening may be used twice: use a "
                         f"book with at least {matches} openings or set UniquePerMatchOnly: true"])


def book_fingerprint(book: Sequence[Opening]) -> str:
    """Short hash of the book's content, to store beside the order and detect a changed book."""
    digest = hashlib.sha256()
    for opening in book:
        digest.update(f"{opening.fen or ''}|{' '.join(opening.moves)}\n".encode())
    return digest.hexdigest()[:16]


def _start_of(board: chess.Board) -> chess.Board:
    """The position ``board`` started from (its moves taken back)."""
    return board.root()


def opening_start_board(opening: Opening, chess960: bool | None = None) -> chess.Board:
    """The position after the opening's book moves (useful for PGN and checks);
    ``chess960`` None: Chess960 castling when the FEN's castling rights need it."""
    board = board_at(opening.fen, chess960)
    for uci in opening.moves:
        board.push_uci(uci)
    return board
