"""The one PGN writer of both backends (built-in referee and cutechess-cli), cutechess's layout.

``write_game`` lays a game out the way cutechess-cli writes it: the seven-tag roster first,
then every other tag alphabetically, move comments without inner spaces
(``12. Nf3 {+0.35/16 5.1s}``), and the reason the game ended appended to the last comment
(``{+M59/20 0.15s, White wins by adjudication: SyzygyTB}``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TextIO

import chess
import chess.pgn

ROSTER = ("Event", "Site", "Date", "Round", "White", "Black", "Result")


class QuietGameBuilder(chess.pgn.GameBuilder):
    """python-chess's game builder without its log line per error: each bad move, FEN or tag
    is kept in ``game.errors`` only, for the caller to report as it sees fit."""

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


def read_game(handle: TextIO, builder: type[chess.pgn.GameBuilder] = QuietGameBuilder
              ) -> chess.pgn.Game | None:
    """The next game of a PGN stream (None at its end): the one PGN reader of the runner.
    Nothing is logged; what could not be read is in ``game.errors``."""
    return chess.pgn.read_game(handle, Visitor=builder)


def read_games(handle: TextIO) -> Iterator[chess.pgn.Game]:
    """Every game of a PGN stream, in file order (:func:`read_game`)."""
    while (game := read_game(handle)) is not None:
        yield game


def escape_tag(value: str) -> str:
    """A tag value as the PGN standard writes it: ``\\`` and ``"`` escaped with a backslash,
    and no line breaks or other control characters (replaced by a space), so a name can never
    end the tag or the header early."""
    text = str(value)
    if not text.isprintable():  # (most values are: no walk over their characters)
        text = "".join(" " if not ch.isprintable() else ch for ch in text)
    return text.replace("\\", "\\\\").replace('"', '\\"')


def unescape_tag(value: str) -> str:
    """The inverse of :func:`escape_tag` for a tag value as python-chess reads it (raw)."""
    out: list[str] = []
    chars = iter(value)
    for ch in chars:
        if ch == "\\":
            ch = next(chars, "\\")
        out.append(ch)
    return "".join(out)


class CutechessExporter(chess.pgn.StringExporter):
    """python-chess's PGN writer laid out like cutechess: ``12. Nf3 {+0.35/16 5.1s}``.

    Comments have no inner spaces, and a move number, its move and the move's comment
    stay on one line (one token for the line wrapper).
    """

    _held = ""

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        super().visit_header(tagname, escape_tag(tagvalue))

    def _flush(self) -> None:
        if self._held:
            held, self._held = self._held, ""
            self.write_token(held + " ")

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        self.visit_san(board.turn, board.fullmove_number, board.san(move))

    def visit_san(self, turn: chess.Color, fullmove_number: int, san: str) -> None:
        """A move whose SAN is already known (the referee computed it as it was played)."""
        self._flush()
        if self.variations or not self.variation_depth:
            number = ""
            if turn == chess.WHITE:
                number = f"{fullmove_number}. "
            elif self.force_movenumber:
                number = f"{fullmove_number}... "
            self._held = number + san
            self.force_movenumber = False

    def visit_comment(self, comment: str) -> None:
        if self.comments and (self.variations or not self.variation_depth):
            text = "{" + comment.replace("}", "").strip() + "}"
            if self._held:
                text, self._held = f"{self._held} {text}", ""
            self.write_token(text + " ")

    def visit_nag(self, nag: int) -> None:
        self._flush()
        super().visit_nag(nag)

    def begin_variation(self) -> None:
        self._flush()
        super().begin_variation()

    def end_variation(self) -> None:
        self._flush()
        super().end_variation()

    def visit_result(self, result: str) -> None:
        self._flush()
        super().visit_result(result)


def write_game(tags: Mapping[str, str], start_fen: str | None, moves: Sequence[str],
               comments: Sequence[str], reason: str | None,
               sans: Sequence[str] | None = None, chess960: bool = False) -> str:
    """The PGN text of one game, cutechess's layout.

    ``tags`` in any order (roster first and the rest sorted on output); ``FEN`` and
    ``SetUp`` are written for a ``start_fen`` other than the standard start. ``moves`` are
    UCI, one comment per move; ``reason`` is appended to the last comment (or is the
    game's only comment when no move was played). ``sans``: the moves' SAN when the caller
    already has it (the referee does); the game is then not replayed on a board.
    ``chess960``: a Chess960 game (Variant tag, FEN always, castling king-takes-rook).
    """
    standard = not chess960 and (start_fen is None or start_fen == chess.STARTING_FEN)
    if standard and sans is not None and moves:  # the referee's games: no Game object
        headers = _ordered_tags(tags)
        if len(sans) != len(moves):
            raise ValueError(f"{len(moves)} moves but {len(sans)} SANs")
        return _write_known(headers, sans, comments, reason)
    game = chess.pgn.Game()
    if chess960:  # Variant "Chess960", and the FEN even of position 518 (the standard start)
        board = chess.Board(start_fen, chess960=True) if start_fen else chess.Board(chess960=True)
        game.setup(board)
        game.headers["FEN"] = board.fen()
        game.headers["SetUp"] = "1"
    elif start_fen is not None and start_fen != chess.STARTING_FEN:
        game.setup(start_fen)
    for key, value in tags.items():
        if key not in ("FEN", "SetUp") and not (chess960 and key == "Variant"):
            game.headers[key] = value
    headers = list(game.headers.items())  # the roster first, in its order
    others = sorted((key, value) for key, value in headers if key not in ROSTER)
    headers = [(key, value) for key, value in headers if key in ROSTER] + others
    if sans is not None and moves:
        if len(sans) != len(moves):
            raise ValueError(f"{len(moves)} moves but {len(sans)} SANs")
        return _write_known(headers, sans, comments, reason)
    for key, _ in others:
        del game.headers[key]
    for key, value in others:
        game.headers[key] = value
    node: chess.pgn.GameNode = game
    for uci, comment in zip(moves, comments, strict=True):
        node = node.add_variation(chess.Move.from_uci(uci), comment=comment)
    if reason:
        node.comment = f"{node.comment}, {reason}" if node.comment else reason
    return game.accept(CutechessExporter(headers=True, variations=False, comments=True))


COLUMNS = 80  # python-chess's StringExporter wraps the moves at 80 columns

#: the seven-tag roster as a new ``chess.pgn.Game`` has it (its defaults, in roster order)
_ROSTER_DEFAULTS = tuple(chess.pgn.Headers().items())


def _ordered_tags(tags: Mapping[str, str]) -> list[tuple[str, str]]:
    """The headers ``write_game`` writes for a game from the standard start (``FEN`` and
    ``SetUp`` left out): the roster in its order (python-chess's defaults where ``tags``
    has none), then the other tags sorted; a tag python-chess's ``Headers`` refuses (a bad
    name, a line break in a value) raises its ValueError. The list a ``chess.pgn.Game``
    given ``tags`` yields, without building one."""
    roster = dict(_ROSTER_DEFAULTS)
    others = []
    for key, value in tags.items():
        if key in roster:
            roster[key] = value
        elif key in ("FEN", "SetUp"):
            continue
        elif not chess.pgn.TAG_NAME_REGEX.match(key):
            raise ValueError(f"invalid pgn header tag: {key!r}")
        elif "\n" in value or "\r" in value:
            raise ValueError(f"line break in pgn header {key}: {value!r}")
        else:
            others.append((key, value))
    return list(roster.items()) + sorted(others)


def _write_known(headers: list[tuple[str, str]], sans: Sequence[str], comments: Sequence[str],
                 reason: str | None) -> str:
    """The rest of ``write_game`` for moves whose SAN is known (``headers``: the game's
    tags in their order): the text ``game.accept(CutechessExporter(...))`` writes for them
    (tags, move numbers, comments and the 80-column wrap of python-chess's
    ``StringExporter``, byte for byte), written straight from the SAN without building the
    moves, replaying them or a visit per token."""
    if len(sans) != len(comments):
        raise ValueError(f"{len(sans)} moves but {len(comments)} comments")
    lines = [f'[{key} "{escape_tag(value)}"]' for key, value in headers]
    lines.append("")
    tags = dict(headers)
    start = tags.get("FEN")
    if start is None:
        turn, number = chess.WHITE, 1
    else:  # a FEN python-chess wrote (game.setup): its six fields
        fields = start.split()
        turn, number = fields[1] == "w", int(fields[5])
    if reason:  # the reason the game ended goes on the last move's comment
        comments = list(comments)
        comments[-1] = f"{comments[-1]}, {reason}" if comments[-1] else reason
    line = ""  # StringExporter.write_token: a line holds 80 columns at most
    for ply, (san, comment) in enumerate(zip(sans, comments, strict=True)):
        # one token per move: its number (White's, or the first move's), SAN and comment
        if turn:
            token = f"{number}. {san} "
        else:
            token = f"{number}... {san} " if ply == 0 else san + " "
            number += 1
        turn = not turn
        if comment:
            token = token + "{" + comment.replace("}", "").strip() + "} "
        if COLUMNS - len(line) < len(token):
            if line:
                lines.append(line.rstrip())
            line = token
        else:
            line += token
    token = tags.get("Result", "*") + " "  # (the line holds a move at least)
    if COLUMNS - len(line) < len(token):
        lines.append(line.rstrip())
        line = token
    else:
        line += token
    if line:
        lines.append(line.rstrip())
    lines.append("")
    return "\n".join(lines).rstrip()


__all__ = ["ROSTER", "CutechessExporter", "escape_tag", "unescape_tag", "write_game"]
