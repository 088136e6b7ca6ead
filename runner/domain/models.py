"""Data shared between modules: what a game needs (GameSpec) and what it produced (GameRecord).

Both backends (the built-in referee and cutechess-cli) take a GameSpec and return a
GameRecord; the store records GameRecords; pairing and standings read results only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.config.typed import AdjudicationConfig, EngineConfig
    from runner.domain.timecontrol import TimeControl

WHITE_WIN = "1-0"
BLACK_WIN = "0-1"
DRAW = "1/2-1/2"
RESULTS = (WHITE_WIN, BLACK_WIN, DRAW)

# PGN tag on the games of an extra tie-break pair (AllowExtraPairsOnTie): its value is the
# pair's number (1, 2, ...). Such games are not paired by the Swiss rules; audit skips them.
TIEBREAK_PAIR_TAG = "TieBreakPair"
# engines the tournament director withdrew before the game's round was paired, in seed order,
# ", "-separated (runner.service.td.rules); `audit` pairs the round without them
WITHDRAWN_TAG = "Withdrawn"


def white_score(result: str) -> float:
    """Points White scored in a game with this PGN result."""
    return {WHITE_WIN: 1.0, BLACK_WIN: 0.0, DRAW: 0.5}[result]


@dataclass(frozen=True)
class Opening:
    """A start position: an optional FEN plus book moves (UCI) played from it."""

    index: int  # position in the book (0-based); -1 for an ad-hoc opening
    name: str = ""
    fen: str | None = None  # None = standard start position
    moves: tuple[str, ...] = ()  # UCI moves, played instantly and marked {book}


@dataclass(frozen=True)
class GameSpec:
    """Everything needed to play one game."""

    game_id: int  # global number of the game in the event, 1-based, stable across resume
    round: int
    game_in_round: int  # 1-based, in playing order -> PGN Round "R.G"
    white: EngineConfig
    black: EngineConfig
    time_control: TimeControl
    adjudication: AdjudicationConfig
    opening: Opening | None = None
    event: str = "?"
    site: str = "?"
    time_margin_ms: int = 0
    extra_pair: int = 0  # n > 0: a game of the n-th extra tie-break pair, not a Swiss round
    pgn_comments: str = "cutechess"  # cutechess | extended (runner.domain.pgnextended)
    pgn_extras: tuple[str, ...] = ()  # ECO, Elo, TCEC
    variant: str = "standard"  # standard | chess960 | dfrc (runner.domain.variant)
    withdrawn: tuple[str, ...] = ()  # engines withdrawn before this round (WITHDRAWN_TAG)
    # the engines' builds the event allows (runner.play.enginebuild digests; "" = not checked):
    # a worker refuses an engine whose build differs; the PGN tags WhiteBuild/BlackBuild
    white_build: str = ""
    black_build: str = ""
    # the GPUs each engine plays on (runner.domain.gpus.tag_text; "" = none): PGN WhiteGpus/BlackGpus
    white_gpus: str = ""
    black_gpus: str = ""

    @property
    def round_label(self) -> str:
        return f"{self.round}.{self.game_in_round}"


@dataclass
class GameRecord:
    """Everything one game produced, whichever backend played it."""

    white: str
    black: str
    result: str  # "1-0" | "0-1" | "1/2-1/2"
    reason: str  # cutechess wording: "White mates", "Draw by adjudication: TCEC draw rule", ...
    termination: str | None = None  # PGN Termination tag: adjudication, time forfeit, ...
    termination_details: str | None = None  # e.g. "TCEC draw rule", "SyzygyTB"
    moves: list[str] = field(default_factory=list)  # UCI, book moves included
    comments: list[str] = field(default_factory=list)  # one per move: "book" or "+0.35/16 5.1s"
    pgn: str = ""  # the complete PGN text of the game
    start_time: str = ""  # ISO 8601 UTC
    end_time: str = ""
    duration_s: float | None = 0.0  # how long it took to play (None: not known)
    rmobility: str | None = None  # "G1.5" (White achieved) / "-G2.5" (Black achieved)
    opening_index: int | None = None
    start_fen: str | None = None  # None = standard start position

    @property
    def plies(self) -> int:
        return len(self.moves)


# --------------------------------------------------------------------------- event results
# What standings, status and reports read back from the store (runner.store.database builds it).


@dataclass(frozen=True)
class PlayedGame:
    """One finished game as the standings see it."""

    round: int
    game_in_round: int
    white: str
    black: str
    result: str
    rmobility: str | None = None  # r-mobility tag of the game, see runner.domain.rmobility
    extra: bool = False  # an extra tie-break pair played after the scheduled rounds


@dataclass(frozen=True)
class RoundResult:
    number: int
    games: tuple[PlayedGame, ...]
    bye: str | None = None
    complete: bool = True


@dataclass(frozen=True)
class EventResults:
    """Everything the standings need: seeds (seed 1 first), format and finished rounds."""

    seeds: tuple[str, ...]
    games_per_match: int
    rounds: tuple[RoundResult, ...]
    withdrawn: tuple[tuple[str, int], ...] = ()  # (engine, first round paired without it)
