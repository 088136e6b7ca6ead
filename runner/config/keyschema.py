"""The config's keys in one place: typed models with their defaults, bounds, enums and
documentation, validated by msgspec; :func:`json_schema` publishes them (draft 2020-12).

Why msgspec (and not pydantic v2, the other candidate, tried first on this branch): every
command that reads a config validates it, `status` and `standings` as much as `validate`,
so the library's start-up is paid each time. msgspec imports in ~10 ms and builds these
models in well under one; pydantic v2 took ~95 ms of CPU (its import, then building the
models), a third more than the whole `validate` of a shipped config before it
(bench/bench_config.py, docs/performance.md). msgspec validates in C, refuses unknown keys
(``forbid_unknown_fields``), takes bounds, patterns and enums from the types, and exports
JSON Schema draft 2020-12 with the descriptions and defaults. It reports the first problem
only, with its place in the message (`` - at `$.SwissOptions.Rounds` ``): the loader
(runner.config.keycheck.check_schema) reports it, drops the bad value and validates again, a
few microseconds a pass, so every problem is still reported at once.

Each table of keys below is a plain class turned into a msgspec Struct by :func:`block`:
each key carries its default and documentation (:func:`key`), its bounds, and the text
``validate`` prints after "expected" (:class:`Expected`). What the schema cannot know (paths
that exist, outputs distinct from inputs, engines on PATH, the time control syntax,
cross-key rules) is checked by the loader afterwards (runner.config.build, operations,
outputs). Keys whose value has several shapes (Affinity, Restart, Openings.Positions, engine
Options and Args, Ratings' ``fit`` or a number, Alerts.On and Command) are typed ``Any``
here and described exactly in the JSON Schema; the loader checks them.
"""

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
from msgspec import UNSET, Meta, UnsetType

import runner.config.limits as L
from runner.config.typed import ALERT_KINDS, DEFAULT_TIEBREAKS, PGN_EXTRAS, TIEBREAKS
from runner.domain.variant import VARIANTS

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class Expected:
    """What ``validate`` says a key expects ("got X, expected <text>"); ``hints``: the
    names a "did you mean" is drawn from; ``items``: the text is about each item of a list."""

    def __init__(self, text: str, hints: tuple[str, ...] = (), items: bool = False):
        self.text = text
        self.hints = hints
        self.items = items  # the text is about each item of a list


# A non-empty string without NUL characters (YAML text; the loader checks names and paths further)
_TEXT = r"^[^\x00]*[^\s\x00][^\x00]*$"
Text = Annotated[str, Meta(pattern=_TEXT)]
Word = {"type": ["string", "number", "boolean"]}  # an argument or option value, one line
EloValue = Annotated[float, Meta(ge=-L.MAX_RATING, le=L.MAX_RATING)]
TimeoutValue = Annotated[float, Meta(ge=1, le=3600)]
SecondsValue = Annotated[float, Meta(ge=0, le=86400)]
REQUIRED = object()


class Key:
    """A key's default, documentation, example and bounds, as written in the tables below."""

    def __init__(self, default: Any, doc: str, unset: bool, bounds: dict[str, Any],
                 example: Any = None):
        self.default, self.doc, self.unset, self.bounds = default, doc, unset, bounds
        self.example = example


def key(default: Any, doc: str, *, unset: bool = False, example: Any = None,
        **bounds: Any) -> Any:
    """A key with its default, documentation and an example value (the schema's
    ``examples``; docs/config.md shows them). ``unset``: the default is computed by the
    loader (absent = UNSET) but an explicit null is refused, as a missing value."""
    return Key(default, doc, unset, bounds, example)


def _any(schema: dict[str, Any]) -> Meta:
    return Meta(extra_json_schema=schema)


def _field_type(annotation: Any, spec: Key) -> Any:
    """``annotation`` with the key's bounds on its value type, its Expected text in
    ``Meta.extra`` and its documentation, as msgspec reads them. As few typing aliases as
    possible are made (each costs microseconds, paid by every command that loads a config)."""
    metas: list[Any] = []
    expected = None
    base = annotation
    if get_origin(annotation) is Annotated:
        base, *found = get_args(annotation)
        expected = next((m for m in found if isinstance(m, Expected)), None)
        metas = [m for m in found if not isinstance(m, Expected)]
    doc = Meta(description=spec.doc, examples=None if spec.example is None else [spec.example],
               extra={"expected": expected} if expected else {})
    if spec.bounds and not metas and get_origin(base) in (Union, types.UnionType):
        inner = [a for a in get_args(base) if a is not type(None)][0]
        base = Union[Annotated[inner, Meta(**spec.bounds)], None]  # noqa: UP007
    elif spec.bounds:
        metas.append(Meta(**spec.bounds))
    if spec.unset:
        return Annotated[Union[Annotated[base, *metas] if metas else base,  # noqa: UP007
                               UnsetType], doc]
    return Annotated[base, *metas, doc]


def block(spec: type) -> Any:
    """The msgspec Struct of a table of keys (``spec``: annotations and :func:`key` defaults):
    unknown keys, wrong types and values out of bounds fail."""
    fields: list[tuple[Any, ...]] = []
    for name, annotation in spec.__annotations__.items():
        k = spec.__dict__[name]
        typed = _field_type(annotation, k)
        if k.default is REQUIRED:
            fields.append((name, typed))
        else:
            default = UNSET if k.unset else k.default
            if isinstance(default, list) and default:
                default = tuple(default)  # shown as the schema's default; never changed
            fields.append((name, typed, default))
    return msgspec.defstruct(spec.__name__, fields, forbid_unknown_fields=True, frozen=True,
                             kw_only=True, module=__name__, namespace={"__doc__": spec.__doc__})


@block
class SwissOptionsKeys:
    GamesPerMatch: Annotated[int, Expected(
        "1 (single rounds) or 2 (double rounds, colours reversed)")] = key(
        2, "1 = single rounds, 2 = double rounds (the same opening, colours reversed)", ge=1,
        le=2, example=2)
    Rounds: Annotated[int, Expected(f"an integer >= 1 (at most {L.MAX_ROUNDS})")] = key(
        11, "number of Swiss rounds", ge=1, le=L.MAX_ROUNDS, example=11)
    SeedGroupCount: Annotated[int, Expected(f"an integer >= 1 (at most {L.MAX_ENGINES})")] = key(
        1, "TCEC group seeding: number of groups (TCEC: groups of 5-7 engines)", ge=1, le=L.MAX_ENGINES, example=4)
    Seeding: Literal["groups", "random", "listed"] = key(
        "groups", "groups (by Rating, A1 B1 C1 ... A2 B2 ...; unrated engines last), "
                  "random (uses RandomSeed), listed (config order)", example="listed")
    RandomSeed: Annotated[int, Expected("a non-negative integer (at most 2**63 - 1)")] = key(
        0, "seeds random seeding, the opening order and polyglot walks", ge=0, le=L.MAX_SEED, example=20261122)
    DoubleRoundSchedule: Literal["split", "consecutive"] = key(
        "split", "split: every pair's first game, then every reverse game (the wiki); "
                 "consecutive: each pair's two games back to back (as TCEC ran it)", example="consecutive")
    UniquePerMatchOnly: bool = key(
        True, "true: openings may repeat across matches, never within one (the book wraps"
              " around); false: no opening is used twice in the event", example=False)
    RandomOpenings: bool = key(True, "shuffle the book once (the order is stored with the"
                                     " state); same as Openings.Order", example=False)
    AllowExtraPairsOnTie: bool = key(
        False, "two engines tied for first after the last round play extra pairs until "
               "one wins a pair", example=True)
    MaxExtraPairs: Annotated[int, Expected(
        f"a positive integer (at most {L.MAX_EXTRA_PAIRS})")] = key(
        10, "at most this many extra pairs", ge=1, le=L.MAX_EXTRA_PAIRS, example=4)
    StatePath: Text = key("state/swiss_state.json",
                          "JSON snapshot for dashboards, rewritten atomically after every"
                          " game; the database and PGN default to names beside it", example="state/s1/swiss_state.json")


@block
class EngineKeys:
    Name: Text = key(REQUIRED, "unique name, used in the PGN and the standings; one line "
                               "of printable text, at most 200 characters", example="Stockfish")
    Command: Text = key(REQUIRED, "executable (a path, or a name on PATH or in /usr/games; required unless EnginesFile gives it), "
                                      "run without a shell", example="stockfish")
    Args: Annotated[list[Any], _any({"type": "array", "items": Word})] = key(
        [], "command-line arguments, one line each", example=['--threads', 1])
    Protocol: Literal["uci", "xboard"] = key("uci", "uci or xboard", example="xboard")
    Rating: Annotated[EloValue | None, Expected(
        f"a finite number from {-L.MAX_RATING:_} to {L.MAX_RATING:_} (Elo)")] = key(
        None, "strength for group seeding (unrated engines come last, in config order)", example=3500)
    Options: Annotated[Any, _any({"type": "object", "additionalProperties": {
        "type": ["string", "number", "boolean", "null"]}})] = key(
        {}, "engine options (Hash, Threads, ...); validate --probe reports options the "
            "engine lacks", example={'Hash': 256, 'Threads': 4})
    Nodes: Annotated[int | None, Expected(
        f"a positive integer (nodes per move), at most {L.MAX_NODES:_}")] = key(
        None, "nodes per move (testing)", ge=1, le=L.MAX_NODES, example=100000)
    Depth: Annotated[int | None, Expected(
        f"a positive integer (plies per move), at most {L.MAX_DEPTH:_}")] = key(
        None, "plies per move (testing)", ge=1, le=L.MAX_DEPTH, example=12)
    MoveTime: Annotated[int | None, Expected(
        f"a positive integer (ms per move), at most {L.MAX_MOVETIME_MS:_}")] = key(
        None, "milliseconds per move (testing)", ge=1, le=L.MAX_MOVETIME_MS, example=500)
    WorkingDir: Text | None = key(None, "working directory of the engine process (an existing "
                                        "directory)", example="/srv/engines/lc0")
    StartupTimeoutS: Annotated[TimeoutValue | None, Expected(L.TIMEOUT_EXPECTED)] = key(
        None, "this engine's handshake / first isready time-out, seconds (an engine "
              "loading a big network; default: StartupTimeoutS)", example=300)
    Ponder: bool | None = key(None, "this engine thinks on the opponent's time (default: "
                                    "the event's Ponder)", example=False)
    Restart: Annotated[Any, _any(L.RESTART_SCHEMA)] = key(
        None, "on / off for this engine alone (default: the event's Restart)", example="off")
    Gpus: Annotated[int, Expected(f"a whole number of GPUs from 0 to {L.MAX_GPUS}")] = key(
        0, "GPUs this engine needs for a game, its own for the whole game (docs/gpus.md)",
        ge=0, le=L.MAX_GPUS, example=1)
    GpuDevices: Annotated[list[Annotated[int, Meta(ge=0, le=L.MAX_GPU_INDEX)]] | None, Expected(
        "a list of GPU indices from the event's Gpus")] = key(
        None, "the devices this engine always plays on (pinned; default: any free ones)",
        example=[0])


@block
class OpeningsKeys:
    File: Text | None = key(None, "the opening book (relative to the config file); 960 "
                                  "events: EPD/PGN of start FENs", example="books/default.pgn")
    Format: Literal["pgn", "epd", "polyglot"] = key(
        None, "pgn, epd or polyglot (.bin) (default: from the file name)", unset=True, example="epd")
    Plies: Annotated[int, Expected(
        f"a non-negative integer (0 = whole line; at most {L.MAX_PLIES})")] = key(
        0, "cut book lines to this many plies (0 = whole line; required for polyglot)", ge=0,
        le=L.MAX_PLIES, example=12)
    Order: Literal["sequential", "random"] = key(
        None, "sequential or random (default: from SwissOptions.RandomOpenings)", unset=True, example="sequential")
    Positions: Annotated[Any, _any({"anyOf": [
        {"const": "random"},
        {"type": "array", "minItems": 1, "items": {"anyOf": [
            {"type": "integer", "minimum": 0, "maximum": 959},
            {"type": "array", "minItems": 2, "maxItems": 2,
             "items": {"type": "integer", "minimum": 0, "maximum": 959}}]}}]})] = key(
        None, "numbered Chess960 starts [518, 0, 959] (dfrc: [[White, Black], ...] pairs)"
              " or random (drawn from RandomSeed; the default in a 960 event); instead of"
              " File", example=[518, 0, 959])


PlyCount = Annotated[int, Expected(f"a positive number of plies (at most {L.MAX_PLIES})")]


@block
class TcecDrawKeys:
    MaxPawns: Annotated[int, Expected("an integer 0..16")] = key(8, "at most this many pawns",
                                                                 ge=0, le=16, example=8)
    MaxPieces: Annotated[int, Expected("an integer 2..32 (kings count)")] = key(
        8, "at most this many pieces other than pawns, kings included", ge=2, le=32, example=8)
    ScoreCp: Annotated[int, Expected(f"centipawns from 0 to {L.MAX_CP}")] = key(
        20, "both engines' |score| at most this", ge=0, le=L.MAX_CP, example=20)
    Plies: PlyCount = key(10, "for this many plies (the TCEC draw rule: both engines "
                              "within ScoreCp for this many plies)", ge=1, le=L.MAX_PLIES, example=10)


@block
class TcecWinKeys:
    ScoreCp: Annotated[int, Expected(f"positive centipawns (at most {L.MAX_CP})")] = key(
        1000, "both engines agree one side is ahead by at least this", ge=1, le=L.MAX_CP, example=1000)
    Plies: PlyCount = key(10, "for this many plies (both engines agree one side is "
                              "winning)", ge=1, le=L.MAX_PLIES, example=10)


@block
class TablebasesKeys:
    Paths: Annotated[list[Any], _any({"type": "array", "items": {"type": "string"}})] = key(
        [], "directories of Syzygy WDL tables", example=['/srv/syzygy'])
    MaxPieces: Annotated[int, Expected("an integer 3..7")] = key(
        6, "adjudicate positions with at most this many men", ge=3, le=7, example=6)
    Ignore50: bool = key(False, "cursed wins and blessed losses count as wins and losses "
                                "(by default they are draws)", example=True)


@block
class AdjudicationKeys:
    TcecDraw: TcecDrawKeys | None = key(None, "the TCEC draw rule (kings count among the "
                                              "pieces); off when absent", example={'MaxPawns': 8, 'MaxPieces': 8, 'ScoreCp': 20, 'Plies': 10})
    TcecWin: TcecWinKeys | None = key(None, "the TCEC win rule: both engines agree one "
                                            "side is winning; off when absent", example={'ScoreCp': 1000, 'Plies': 10})
    Tablebases: TablebasesKeys | None = key(None, "Syzygy WDL adjudication; off when "
                                                  "absent", example={'Paths': ['/srv/syzygy'], 'MaxPieces': 6})
    MaxMoves: Annotated[int, Expected(
        f"a non-negative integer (0 = off; at most {L.MAX_PLIES})")] = key(
        0, "draw after this many full moves (0 = off)", ge=0, le=L.MAX_PLIES, example=200)


@block
class InterruptionKeys:
    Mode: Literal["resume", "replay"] = key(
        "resume", "resume: TCEC rule 7.c (the rules below, else the game continues from "
                  "its position); replay: played again from its first move", example="replay")
    Adjudicate: bool = key(True, "apply 7.c.ii-iv before continuing a game", example=False)
    WinScoreCp: Annotated[int, Expected("centipawns from 1 to 100000")] = key(
        1000, "7.c.ii: both engines' last scores at least this for the same side", ge=1,
        le=100000, example=1000)
    DrawScoreCp: Annotated[int, Expected("centipawns from 0 to 100000")] = key(
        15, "7.c.iii: both |scores| at most this and both engines have made DrawMoves "
            "moves of their own: a draw", ge=0, le=100000, example=15)
    DrawMoves: Annotated[int, Expected("moves from 0 to 10000")] = key(
        35, "7.c.iii: ... and both engines have made this many moves of their own", ge=0, le=10000, example=35)
    TablebasePieces: Annotated[int, Expected("an integer 0..7 (0 = off)")] = key(
        7, "7.c.iv: this many men or fewer and Adjudication.Tablebases covers the "
           "position: the tablebase result (0 = off)", ge=0, le=7, example=6)
    CompensationS: Annotated[SecondsValue | None, Expected("seconds from 0 to 86400")] = key(
        None, "7.c.v: added to both clocks when a game continues from its position "
              "(default 2% of the base time, 1-60 s)", example=30)


_FIT = {"anyOf": [{"const": "fit"}, {"type": "number"}]}


@block
class RatingsKeys:
    Anchor: Text | None = key(None, "rate with this engine fixed at Elo (Ordo -A NAME -a "
                                    "ELO)", example="Stockfish")
    Average: Annotated[float, Expected(
        f"a finite number from {-L.MAX_RATING:_} to {L.MAX_RATING:_} (Elo)")] = key(
        0.0, "without Anchor: the rating of the pool average (Ordo -a)", ge=-L.MAX_RATING,
        le=L.MAX_RATING, example=3000)
    Elo: Annotated[float, Expected(
        f"a finite number from {-L.MAX_RATING:_} to {L.MAX_RATING:_} (Elo)")] = key(
        0.0, "the rating of the Anchor", ge=-L.MAX_RATING, le=L.MAX_RATING, example=3500)
    WhiteAdvantage: Annotated[Any, _any({"anyOf": [{"const": "fit"}, {
        "type": "number", "exclusiveMinimum": -L.MAX_WHITE_ADVANTAGE,
        "exclusiveMaximum": L.MAX_WHITE_ADVANTAGE}]})] = key(
        0.0, "fit (Ordo -W), or a fixed advantage in Elo (-w; Ordo's default is 0)", example="fit")
    DrawRate: Annotated[Any, _any({"anyOf": [{"const": "fit"}, {
        "type": "number", "minimum": 0, "exclusiveMaximum": 100}]})] = key(
        "fit", "fit (Ordo -D), or a fixed % of draws between equal engines (-d); shapes "
               "the simulations", example=60)
    Simulations: Annotated[int, Expected(
        "a number of simulations from 0 to 100000 (0 = no error margins)")] = key(
        1000, "error margins from this many simulated events (0 = none)", ge=0,
        le=L.MAX_SIMULATIONS, example=2000)
    Seed: Annotated[int, Expected("an integer from 0 to 2**63-1")] = key(
        0, "seed of the simulations", ge=0, le=L.MAX_SEED, example=7)
    Confidence: Annotated[float, Expected("a percentage between 0 and 100")] = key(
        95.0, "confidence of the margins, percent", gt=0, lt=100, example=90)


@block
class ClusterKeys:
    Scheduler: Text = key(REQUIRED, "tls://HOST:PORT (or tcp:// on loopback) of a Dask "
                                    "scheduler: every game is played on a worker of it", example="tls://10.0.0.1:8786")
    WaitS: Annotated[float, Expected("seconds from 0 to 86400")] = key(
        600.0, "how long the runner waits for a lost scheduler (or for a worker able to "
               "play a game) before it stops (exit 1)", ge=0, le=86400, example=1200,
       )
    OverdueS: Annotated[float, Expected("seconds from 1 to 86400")] = key(
        60.0, "a worker that sends nothing for longer than the mover's clock plus this is"
              " taken as cut off: its game continues elsewhere (without a clock: longer "
              "than the slowest move)", ge=1, le=86400, example=120,
       )
    LeaseS: Annotated[float | None, Expected(
        "seconds from 0.5 to 86400, below Cluster.OverdueS")] = key(
        None, "a worker that hears nothing from the runner this long stops its game and "
        "kills its engines (default 3/4 of OverdueS)", ge=0.5, le=86400,
        example=45)
    RetryRefusedS: Annotated[float, Expected("seconds from 1 to 604800")] = key(
        600.0, "a worker that refused an engine (its probe failed there) gets none of its"
               " games for this long, then it is asked again", ge=1,
        le=86400 * 7, example=3600)
    MaxLostAttempts: Annotated[int, Expected("a number of attempts from 1 to 1000")] = key(
        3, "a game that loses its worker this many times stops the event (exit 1), naming"
           " the game, the workers and why", ge=1, le=1000, example=5)
    Insecure: bool = key(
        False, "true: a plain tcp:// scheduler on another machine is allowed (a private "
        "network; one warning), as run --insecure", example=True)


@block
class EngineLogsKeys:
    Dir: Text = key(REQUIRED, "directory of the engine logs, one file per game", example="logs")
    Keep: Literal["failures", "all"] = key(
        "failures", "failures: only games lost by crash, stall, illegal move or time; "
                    "all: every game", example="all")


@block
class AlertsKeys:
    """Where the runner sends alerts (docs/alerts.md): Command, Url or both."""

    Command: Annotated[Any, _any({"anyOf": [
        {"type": "string", "pattern": _TEXT},
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}]})] = key(
        None, "a command (a list of strings, the program first, or one string split as a "
        "shell would) given the alert's JSON on its stdin", example=['/usr/local/bin/page-the-td', '--urgent'])
    Url: Annotated[str | None, Expected(
        "an http:// or https:// URL with a host, such as https://example.org/hook")] = key(
        None, "an http:// or https:// URL the alert's JSON is POSTed to",
        pattern=r"^https?://[^\s/?#\x00]+(?:[/?#][^\s\x00]*)?$", example="https://hooks.example.org/tcec-swiss")
    TimeoutS: Annotated[float, Expected(
        "a finite number from 0.1 to 300 (seconds per attempt)")] = key(
        10.0, "time-out of each attempt, seconds (a command is then killed)", ge=0.1, le=300, example=10)
    Retries: Annotated[int, Expected("an integer from 0 to 20 (attempts after the first)")] = key(
        3, "attempts after the first, with a back-off", ge=0, le=20, example=3)
    QueueSize: Annotated[int, Expected("a positive integer (alerts), at most 10_000")] = key(
        100, "alerts waiting to be sent (the oldest is dropped when full)", ge=1, le=10_000, example=100)
    DiskFreeMb: Annotated[int, Expected(
        "an integer from 0 to 1_000_000_000 (MB; 0 = off)")] = key(
        1024, "disk_low when the database's disk has less free, MB (0 = off; sent again "
              "once recovered)", ge=0, le=10**9, example=2048)
    On: Annotated[Any, _any({"anyOf": [
        {"const": "all"},
        {"type": "array", "minItems": 1, "items": {"enum": list(ALERT_KINDS)}}]})] = key(
        "all", "the kinds of alert sent: all, or a list of " + ", ".join(ALERT_KINDS),
        example=['event_failed', 'engine_crashed', 'disk_low'])


@block
class ConfigKeys:
    """A swiss-runner tournament config (YAML). Keys are PascalCase, as TCEC's SwissOptions."""

    Event: Text = key("swiss-runner event", "PGN Event tag; one line of printable text, "
                                            "at most 200 characters", example="TCEC Swiss 8")
    Site: Text = key("?", "PGN Site tag; one line of printable text, at most 200 "
                          "characters", example="tcec-chess.com")
    SwissOptions: SwissOptionsKeys | None = key(REQUIRED, "the Swiss system's options "
                                                          "(the block of an "
                                                          "Encroissant/TCEC-style config "
                                                          "pasted as it is)", example={'Rounds': 11, 'GamesPerMatch': 2})
    TimeControl: Annotated[Any, _any({"type": ["string", "number"]})] = key(
        REQUIRED, "cutechess syntax [moves/]time[+inc], time in seconds or m:ss/h:mm:ss, "
                  "or inf (no clock). TCEC's 45+4.5 is 45:00+4.5 (45+4.5 would be 45 "
                  "seconds); at most 7 days per period, a 3600 s increment, 1000 moves "
                  "per period; validate prints how it read it", example="45:00+4.5")
    TimeMarginMs: Annotated[int, Expected(f"milliseconds from 0 to {L.MAX_MARGIN_MS}")] = key(
        0, "overrun forgiven before a time loss, milliseconds (cutechess's timemargin)", ge=0,
        le=L.MAX_MARGIN_MS, example=100)
    Concurrency: Annotated[int, Expected(
        f"a positive integer (at most {L.MAX_CONCURRENCY} games at once)")] = key(
        1, "games played at once (may change between resumes)", ge=1, le=L.MAX_CONCURRENCY, example=2)
    Backend: Literal["python-chess", "cutechess"] = key(
        "python-chess", "python-chess (the built-in referee) or cutechess (each game "
                        "handed to cutechess-cli, docs/cutechess.md)", example="cutechess")
    CutechessPath: Text = key("cutechess-cli", "the cutechess-cli binary, for Backend: cutechess", example="/usr/local/bin/cutechess-cli")
    PgnOut: Text = key(None, "every finished game is appended here (default: games.pgn "
                             "beside StatePath); an existing file that does not hold this"
                             " event's games is kept as NAME.<time>.bak, never "
                             "overwritten", unset=True, example="games/tcec-swiss.pgn")
    Database: Text = key(None, "the SQLite state, the record of the event (default: "
                               "StatePath with .sqlite3)", unset=True, example="state/event.sqlite3")
    Openings: OpeningsKeys | None = key(None, "the opening book; none: every game from "
                                              "the start position (960 events: random "
                                              "starts)", example={'File': 'books/default.pgn', 'Plies': 12})
    Adjudication: AdjudicationKeys | None = key(None, "adjudication rules (each off when "
                                                      "absent)", example={'MaxMoves': 200})
    Engines: Annotated[list[EngineKeys] | None, Expected(
        "a list of engines (Name, Command, ...)")] = key(
        None, "the engines (required unless EnginesFile), at most 1000", example=[{'Name': 'Stockfish', 'Command': 'stockfish', 'Rating': 3500}])
    Tiebreaks: Annotated[list[Literal[TIEBREAKS]], Expected(  # type: ignore[valid-type]
        " | ".join(TIEBREAKS), hints=TIEBREAKS, items=True)] = key(
        list(DEFAULT_TIEBREAKS), "the tiebreak chain, each once: the TCEC chain by "
                                 "default; also Buchholz, MedianBuchholz, "
                                 "ProgressiveScore, BlackGames", example=['SonnebornBerger', 'Wins', 'Buchholz'])
    SnapshotIntervalS: Annotated[float, Expected("seconds from 0.1 to 3600")] = key(
        1.0, "while games are played, the JSON snapshot (StatePath) is rewritten at most "
             "this often, seconds; also at each game's start and end (games shorter than "
             "this: one write per this many seconds)",
        ge=0.1, le=3600, example=5)
    Interruption: InterruptionKeys | None = key(None, "what becomes of a game interrupted"
                                                      " by a crash, kill -9 or an abort "
                                                      "(TCEC rule 7.c, docs/resume.md)", example={'Mode': 'replay'})
    Affinity: Annotated[Any, _any({"anyOf": [
        {"enum": ["auto", "off", False]},
        {"type": "array", "items": {"type": "array", "minItems": 1,
                                    "items": {"type": "integer", "minimum": 0}}}]})] = key(
        "off", "auto (each game slot gets its own cores, as many as the engines' Threads;"
               " both engines of a game share them), off, or core lists per game slot; "
               "validate checks the cores exist and Concurrency x Threads fits", example=[[0, 1], [2, 3]])
    EngineLogs: EngineLogsKeys | None = key(None, "every engine line of a game, "
                                                  "time-stamped, one file per game (PGN "
                                                  "tag EngineLog, listed by status)", example={'Dir': 'logs', 'Keep': 'failures'})
    StartRetryS: Annotated[list[SecondsValue], Expected(
        "a list of seconds (0 to 86400) to wait before each new try", items=True)] = key(
        [5, 15, 40], "an engine start that failed is tried again after each of these waits; "
        "then its game is lost by rule 7.a (both engines: the game is held, tried again "
        "after their sum)", example=[10, 30, 60])
    StartupTimeoutS: Annotated[TimeoutValue | None, Expected(L.TIMEOUT_EXPECTED)] = key(
        None, "seconds (1-3600) for each engine's handshake and for its "
              "ucinewgame+isready before its first move; not on the clock (default 30)", example=120)
    PgnComments: Literal["cutechess", "extended"] = key(
        "cutechess", "cutechess: cutechess's +0.35/16 5.1s; extended adds per move "
                     "[%clk], [%emt], [%eval] (python-chess reads them), seldepth, nodes,"
                     " nps, tbhits and the PV", example="extended")
    PgnExtras: Annotated[list[Literal[PGN_EXTRAS]], Expected(  # type: ignore[valid-type]
        " | ".join(PGN_EXTRAS), items=True)] = key([], "any of ECO (tag from Scid's "
                                                       "classification), Elo "
                                                       "(WhiteElo/BlackElo from Rating), "
                                                       "TCEC (R50, Rd, Rr per move)", example=['ECO', 'Elo'])
    EpdOut: Text | None = key(None, "the final position of every game appended here "
                                    "(cutechess's -epdout)", example="state/final.epd")
    EnginesFile: Annotated[Any, _any({"type": "string"})] = key(
        None, "cutechess's engines.json: all its engines, or those Engines names (its "
              "keys override, Options merge)", example="engines.json")
    LivePgn: Text | None = key(None, "the current round's games (in progress and "
                                     "finished, [%clk]/[%eval] per move) rewritten here "
                                     "at most every 0.1 s, for relays "
                                     "(docs/broadcast.md); run --live-pgn FILE overrides "
                                     "it", example="state/live.pgn")
    Ponder: bool = key(False, "engines think on the opponent's time (UCI go ponder / "
                              "ponderhit / stop, XBoard hard); only each engine's own "
                              "time is charged; needs Concurrency x 2 x Threads cores (or"
                              " Affinity: off)", example=True)
    Restart: Annotated[Any, _any(L.RESTART_SCHEMA)] = key(
        "on", "on: fresh engine processes for every game (as TCEC); off: an engine is "
              "kept for the next game that needs it, with ucinewgame+isready (XBoard "
              "new+ping) between games, and restarted after a crash, stall, illegal move "
              "or time forfeit; built-in referee only", example="off")
    Ratings: RatingsKeys | None = key(None, "how ratings and standings compute Elo "
                                            "(docs/ratings.md)", example={'Anchor': 'Stockfish', 'Elo': 3500})
    Cluster: ClusterKeys | None = key(None, "play every game on a Dask cluster "
                                            "(docs/cluster.md); none: on this machine", example={'Scheduler': 'tls://10.0.0.1:8786'})
    Variant: Literal[VARIANTS] = key("standard", "standard, chess960 or dfrc (Double "
                                                 "Fischer Random: White's and Black's "
                                                 "back ranks drawn independently); part "
                                                 "of the event; engines must declare "
                                                 "Chess960 (UCI_Chess960, XBoard "
                                                 "fischerandom)", example="chess960")  # type: ignore[valid-type]
    Alerts: AlertsKeys | None = key(None, "tell a person when the event stops, fails or "
                                          "ends, a round ends, an engine crashes, stalls "
                                          "or forfeits, a worker is lost, the disk is "
                                          "nearly full or the TD decides "
                                          "(docs/alerts.md); not part of the event. none:"
                                          " no alerts", example={'Url': 'https://hooks.example.org/swiss'})
    Gpus: Annotated[Any, _any({"anyOf": [
        {"const": "auto"},
        {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True}]})] = key(
        None, "the GPU indices the event may use ([0, 1]), or auto (nvidia-smi -L); none: no "
        "GPU handling", example=[0, 1])


def json_schema() -> dict[str, Any]:
    """The config's JSON Schema (draft 2020-12), strict where ``validate`` is."""
    generated = msgspec.json.schema(ConfigKeys)
    defs = generated["$defs"]
    root = defs.pop("ConfigKeys")
    schema = {"$schema": SCHEMA_DIALECT, **root, "title": "swiss-runner config", "$defs": defs}
    schema["required"] = ["SwissOptions", "TimeControl"]
    schema["anyOf"] = [{"required": ["Engines"]}, {"required": ["EnginesFile"]}]
    schema["properties"]["Tiebreaks"]["uniqueItems"] = True
    defs["AlertsKeys"]["anyOf"] = [{"required": ["Command"]}, {"required": ["Url"]}]
    # with EnginesFile an engine may be named alone: the file gives its Command
    defs["EngineKeys"]["required"] = ["Name"]
    schema["if"] = {"not": {"required": ["EnginesFile"]}}
    schema["then"] = {"properties": {"Engines": {"anyOf": [
        {"type": "array", "items": {"required": ["Command"]}}, {"type": "null"}]}}}
    return schema
