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
(runner.config.loader.check_schema) reports it, drops the bad value and validates again, a
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

from runner.config import limits as L
from runner.config.schema import ALERT_KINDS, DEFAULT_TIEBREAKS, PGN_EXTRAS, TIEBREAKS
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
    """A key's default, documentation and bounds, as written in the tables below."""

    def __init__(self, default: Any, doc: str, unset: bool, bounds: dict[str, Any]):
        self.default, self.doc, self.unset, self.bounds = default, doc, unset, bounds


def key(default: Any, doc: str, *, unset: bool = False, **bounds: Any) -> Any:
    """A key with its default and documentation. ``unset``: the default is computed by the
    loader (absent = UNSET) but an explicit null is refused, as a missing value."""
    return Key(default, doc, unset, bounds)


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
    doc = Meta(description=spec.doc, extra={"expected": expected} if expected else {})
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
        le=2)
    Rounds: Annotated[int, Expected(f"an integer >= 1 (at most {L.MAX_ROUNDS})")] = key(
        11, "number of Swiss rounds", ge=1, le=L.MAX_ROUNDS)
    SeedGroupCount: Annotated[int, Expected(f"an integer >= 1 (at most {L.MAX_ENGINES})")] = key(
        1, "TCEC group seeding: number of groups", ge=1, le=L.MAX_ENGINES)
    Seeding: Literal["groups", "random", "listed"] = key(
        "groups", "groups (by Rating), random (uses RandomSeed), listed (config order)")
    RandomSeed: Annotated[int, Expected("a non-negative integer (at most 2**63 - 1)")] = key(
        0, "seeds random seeding, the opening order and polyglot walks", ge=0, le=L.MAX_SEED)
    DoubleRoundSchedule: Literal["split", "consecutive"] = key(
        "split", "split: every pair's first game, then every reverse game; consecutive: each "
        "pair's two games back to back")
    UniquePerMatchOnly: bool = key(
        True, "true: openings may repeat across matches, never within one; false: no opening "
        "is used twice in the event")
    RandomOpenings: bool = key(True, "shuffle the book once; same as Openings.Order")
    AllowExtraPairsOnTie: bool = key(
        False, "two engines tied for first after the last round play extra pairs")
    MaxExtraPairs: Annotated[int, Expected(
        f"a positive integer (at most {L.MAX_EXTRA_PAIRS})")] = key(
        10, "at most this many extra pairs", ge=1, le=L.MAX_EXTRA_PAIRS)
    StatePath: Text = key("state/swiss_state.json",
                          "JSON snapshot for dashboards, rewritten atomically after every game")


@block
class EngineKeys:
    Name: Text = key(REQUIRED, "unique name, used in the PGN and the standings")
    Command: Text = key(REQUIRED, "executable (a path, or a name on PATH or in /usr/games), "
                                      "run without a shell")
    Args: Annotated[list[Any], _any({"type": "array", "items": Word})] = key(
        [], "command-line arguments")
    Protocol: Literal["uci", "xboard"] = key("uci", "uci or xboard")
    Rating: Annotated[EloValue | None, Expected(
        f"a finite number from {-L.MAX_RATING:_} to {L.MAX_RATING:_} (Elo)")] = key(
        None, "strength for group seeding (unrated engines come last)")
    Options: Annotated[Any, _any({"type": "object", "additionalProperties": {
        "type": ["string", "number", "boolean", "null"]}})] = key(
        {}, "engine options (Hash, Threads, ...)")
    Nodes: Annotated[int | None, Expected(
        f"a positive integer (nodes per move), at most {L.MAX_NODES:_}")] = key(
        None, "nodes per move (testing)", ge=1, le=L.MAX_NODES)
    Depth: Annotated[int | None, Expected(
        f"a positive integer (plies per move), at most {L.MAX_DEPTH:_}")] = key(
        None, "plies per move (testing)", ge=1, le=L.MAX_DEPTH)
    MoveTime: Annotated[int | None, Expected(
        f"a positive integer (ms per move), at most {L.MAX_MOVETIME_MS:_}")] = key(
        None, "milliseconds per move (testing)", ge=1, le=L.MAX_MOVETIME_MS)
    WorkingDir: Text | None = key(None, "working directory of the engine process (an existing "
                                        "directory)")
    StartupTimeoutS: Annotated[TimeoutValue | None, Expected(L.TIMEOUT_EXPECTED)] = key(
        None, "this engine's handshake / first isready time-out, seconds")
    Ponder: bool | None = key(None, "this engine thinks on the opponent's time")
    Restart: Annotated[Any, _any(L.RESTART_SCHEMA)] = key(
        None, "on / off for this engine alone (default: the event's Restart)")
    Gpus: Annotated[int, Expected(f"a whole number of GPUs from 0 to {L.MAX_GPUS}")] = key(
        0, "GPUs this engine needs for a game, its own for the whole game (docs/gpus.md)",
        ge=0, le=L.MAX_GPUS)
    GpuDevices: Annotated[list[Annotated[int, Meta(ge=0, le=L.MAX_GPU_INDEX)]] | None, Expected(
        "a list of GPU indices from the event's Gpus")] = key(
        None, "the devices this engine always plays on (pinned; default: any free ones)")


@block
class OpeningsKeys:
    File: Text | None = key(None, "the opening book (relative to the config file)")
    Format: Literal["pgn", "epd", "polyglot"] = key(
        None, "pgn, epd or polyglot (default: from the file name)", unset=True)
    Plies: Annotated[int, Expected(
        f"a non-negative integer (0 = whole line; at most {L.MAX_PLIES})")] = key(
        0, "cut book lines to this many plies (0 = whole line; required for polyglot)", ge=0,
        le=L.MAX_PLIES)
    Order: Literal["sequential", "random"] = key(
        None, "sequential or random (default: from SwissOptions.RandomOpenings)", unset=True)
    Positions: Annotated[Any, _any({"anyOf": [
        {"const": "random"},
        {"type": "array", "minItems": 1, "items": {"anyOf": [
            {"type": "integer", "minimum": 0, "maximum": 959},
            {"type": "array", "minItems": 2, "maxItems": 2,
             "items": {"type": "integer", "minimum": 0, "maximum": 959}}]}}]})] = key(
        None, "numbered Chess960 starts [518, 0, 959] (dfrc: [[White, Black], ...]) or random; "
        "instead of File")


PlyCount = Annotated[int, Expected(f"a positive number of plies (at most {L.MAX_PLIES})")]


@block
class TcecDrawKeys:
    MaxPawns: Annotated[int, Expected("an integer 0..16")] = key(8, "at most this many pawns",
                                                                 ge=0, le=16)
    MaxPieces: Annotated[int, Expected("an integer 2..32 (kings count)")] = key(
        8, "at most this many pieces other than pawns, kings included", ge=2, le=32)
    ScoreCp: Annotated[int, Expected(f"centipawns from 0 to {L.MAX_CP}")] = key(
        20, "both engines' |score| at most this", ge=0, le=L.MAX_CP)
    Plies: PlyCount = key(10, "for this many plies", ge=1, le=L.MAX_PLIES)


@block
class TcecWinKeys:
    ScoreCp: Annotated[int, Expected(f"positive centipawns (at most {L.MAX_CP})")] = key(
        1000, "both engines agree one side is ahead by at least this", ge=1, le=L.MAX_CP)
    Plies: PlyCount = key(10, "for this many plies", ge=1, le=L.MAX_PLIES)


@block
class TablebasesKeys:
    Paths: Annotated[list[Any], _any({"type": "array", "items": {"type": "string"}})] = key(
        [], "directories of Syzygy WDL tables")
    MaxPieces: Annotated[int, Expected("an integer 3..7")] = key(
        6, "adjudicate positions with at most this many men", ge=3, le=7)
    Ignore50: bool = key(False, "cursed wins and blessed losses count as wins and losses")


@block
class AdjudicationKeys:
    TcecDraw: TcecDrawKeys | None = key(None, "the TCEC draw rule (off when absent)")
    TcecWin: TcecWinKeys | None = key(None, "the TCEC win rule (off when absent)")
    Tablebases: TablebasesKeys | None = key(None, "Syzygy WDL adjudication (off when absent)")
    MaxMoves: Annotated[int, Expected(
        f"a non-negative integer (0 = off; at most {L.MAX_PLIES})")] = key(
        0, "draw after this many full moves (0 = off)", ge=0, le=L.MAX_PLIES)


@block
class InterruptionKeys:
    Mode: Literal["resume", "replay"] = key(
        "resume", "resume: TCEC rule 7.c; replay: played again from its first move")
    Adjudicate: bool = key(True, "apply 7.c.ii-iv before continuing a game")
    WinScoreCp: Annotated[int, Expected("centipawns from 1 to 100000")] = key(
        1000, "7.c.ii: both engines' last scores at least this for the same side", ge=1,
        le=100000)
    DrawScoreCp: Annotated[int, Expected("centipawns from 0 to 100000")] = key(
        15, "7.c.iii: both |scores| at most this ...", ge=0, le=100000)
    DrawMoves: Annotated[int, Expected("moves from 0 to 10000")] = key(
        35, "7.c.iii: ... and both engines have made this many moves", ge=0, le=10000)
    TablebasePieces: Annotated[int, Expected("an integer 0..7 (0 = off)")] = key(
        7, "7.c.iv: this many men or fewer: the tablebase result (0 = off)", ge=0, le=7)
    CompensationS: Annotated[SecondsValue | None, Expected("seconds from 0 to 86400")] = key(
        None, "7.c.v: added to both clocks (default 2% of the base time, 1-60 s)")


_FIT = {"anyOf": [{"const": "fit"}, {"type": "number"}]}


@block
class RatingsKeys:
    Anchor: Text | None = key(None, "rate with this engine fixed at Elo")
    Average: Annotated[float, Expected(
        f"a finite number from {-L.MAX_RATING:_} to {L.MAX_RATING:_} (Elo)")] = key(
        0.0, "without Anchor: the rating of the pool average", ge=-L.MAX_RATING,
        le=L.MAX_RATING)
    Elo: Annotated[float, Expected(
        f"a finite number from {-L.MAX_RATING:_} to {L.MAX_RATING:_} (Elo)")] = key(
        0.0, "the rating of the Anchor", ge=-L.MAX_RATING, le=L.MAX_RATING)
    WhiteAdvantage: Annotated[Any, _any({"anyOf": [{"const": "fit"}, {
        "type": "number", "exclusiveMinimum": -L.MAX_WHITE_ADVANTAGE,
        "exclusiveMaximum": L.MAX_WHITE_ADVANTAGE}]})] = key(
        0.0, "fit, or a fixed advantage in Elo (Ordo's default is 0)")
    DrawRate: Annotated[Any, _any({"anyOf": [{"const": "fit"}, {
        "type": "number", "minimum": 0, "exclusiveMaximum": 100}]})] = key(
        "fit", "fit, or a fixed % of draws between equal engines")
    Simulations: Annotated[int, Expected(
        "a number of simulations from 0 to 100000 (0 = no error margins)")] = key(
        1000, "error margins from this many simulated events (0 = none)", ge=0,
        le=L.MAX_SIMULATIONS)
    Seed: Annotated[int, Expected("an integer from 0 to 2**63-1")] = key(
        0, "seed of the simulations", ge=0, le=L.MAX_SEED)
    Confidence: Annotated[float, Expected("a percentage between 0 and 100")] = key(
        95.0, "confidence of the margins, percent", gt=0, lt=100)


@block
class ClusterKeys:
    Scheduler: Text = key(REQUIRED, "tcp://HOST:PORT (or tls://) of a Dask scheduler")
    WaitS: Annotated[float, Expected("seconds from 0 to 86400")] = key(
        600.0, "how long the runner waits for a lost scheduler", ge=0, le=86400,
       )
    OverdueS: Annotated[float, Expected("seconds from 1 to 86400")] = key(
        60.0, "a worker silent this long past the mover's clock is cut off", ge=1, le=86400,
       )
    RetryRefusedS: Annotated[float, Expected("seconds from 1 to 604800")] = key(
        600.0, "a worker that refused an engine is asked again after this", ge=1,
        le=86400 * 7)
    MaxLostAttempts: Annotated[int, Expected("a number of attempts from 1 to 1000")] = key(
        3, "a game that loses its worker this often stops the event", ge=1, le=1000)
    Insecure: bool = key(
        False, "true: a plain tcp:// scheduler on another machine is allowed (a private "
        "network; one warning), as run --insecure")


@block
class EngineLogsKeys:
    Dir: Text = key(REQUIRED, "directory of the engine logs, one file per game")
    Keep: Literal["failures", "all"] = key(
        "failures", "failures: only games lost by crash, stall, illegal move or time; all")


@block
class AlertsKeys:
    """Where the runner sends alerts (docs/alerts.md): Command, Url or both."""

    Command: Annotated[Any, _any({"anyOf": [
        {"type": "string", "pattern": _TEXT},
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}]})] = key(
        None, "a command (a list of strings, the program first, or one string split as a "
        "shell would) given the alert's JSON on its stdin")
    Url: Annotated[str | None, Expected(
        "an http:// or https:// URL with a host, such as https://example.org/hook")] = key(
        None, "an http:// or https:// URL the alert's JSON is POSTed to",
        pattern=r"^https?://[^\s/?#\x00]+(?:[/?#][^\s\x00]*)?$")
    TimeoutS: Annotated[float, Expected(
        "a finite number from 0.1 to 300 (seconds per attempt)")] = key(
        10.0, "time-out of each attempt, seconds (a command is then killed)", ge=0.1, le=300)
    Retries: Annotated[int, Expected("an integer from 0 to 20 (attempts after the first)")] = key(
        3, "attempts after the first, with a back-off", ge=0, le=20)
    QueueSize: Annotated[int, Expected("a positive integer (alerts), at most 10_000")] = key(
        100, "alerts waiting to be sent (the oldest is dropped when full)", ge=1, le=10_000)
    DiskFreeMb: Annotated[int, Expected(
        "an integer from 0 to 1_000_000_000 (MB; 0 = off)")] = key(
        1024, "disk_low when the database's disk has less free, MB (0 = off)", ge=0, le=10**9)
    On: Annotated[Any, _any({"anyOf": [
        {"const": "all"},
        {"type": "array", "minItems": 1, "items": {"enum": list(ALERT_KINDS)}}]})] = key(
        "all", "the kinds of alert sent, or all")


@block
class ConfigKeys:
    """A swiss-runner tournament config (YAML). Keys are PascalCase, as TCEC's SwissOptions."""

    Event: Text = key("swiss-runner event", "PGN Event tag")
    Site: Text = key("?", "PGN Site tag")
    SwissOptions: SwissOptionsKeys | None = key(REQUIRED, "the Swiss system's options")
    TimeControl: Annotated[Any, _any({"type": ["string", "number"]})] = key(
        REQUIRED, "cutechess syntax [moves/]time[+inc], time in seconds or m:ss/h:mm:ss, or "
        "inf (TCEC 45+4.5 is 45:00+4.5)")
    TimeMarginMs: Annotated[int, Expected(f"milliseconds from 0 to {L.MAX_MARGIN_MS}")] = key(
        0, "overrun forgiven before a time loss (cutechess's timemargin)", ge=0,
        le=L.MAX_MARGIN_MS)
    Concurrency: Annotated[int, Expected(
        f"a positive integer (at most {L.MAX_CONCURRENCY} games at once)")] = key(
        1, "games played at once", ge=1, le=L.MAX_CONCURRENCY)
    Backend: Literal["python-chess", "cutechess"] = key(
        "python-chess", "python-chess (built-in referee) or cutechess")
    CutechessPath: Text = key("cutechess-cli", "the cutechess-cli binary, for Backend: cutechess")
    PgnOut: Text = key(None, "every finished game is appended here (default: games.pgn beside "
                             "StatePath)", unset=True)
    Database: Text = key(None, "the SQLite state (default: StatePath with .sqlite3)", unset=True)
    Openings: OpeningsKeys | None = key(None, "the opening book (none: the start position)")
    Adjudication: AdjudicationKeys | None = key(None, "adjudication rules")
    Engines: Annotated[list[EngineKeys] | None, Expected(
        "a list of engines (Name, Command, ...)")] = key(
        None, "the engines (required unless EnginesFile)")
    Tiebreaks: Annotated[list[Literal[TIEBREAKS]], Expected(  # type: ignore[valid-type]
        " | ".join(TIEBREAKS), hints=TIEBREAKS, items=True)] = key(
        list(DEFAULT_TIEBREAKS), "the tiebreak chain, each once")
    SnapshotIntervalS: Annotated[float, Expected("seconds from 0.1 to 3600")] = key(
        1.0, "the JSON snapshot is rewritten at most this often while games are played",
        ge=0.1, le=3600)
    Interruption: InterruptionKeys | None = key(None, "games interrupted by a crash (rule 7.c)")
    Affinity: Annotated[Any, _any({"anyOf": [
        {"enum": ["auto", "off", False]},
        {"type": "array", "items": {"type": "array", "minItems": 1,
                                    "items": {"type": "integer", "minimum": 0}}}]})] = key(
        "off", "auto, off, or core lists per game slot [[0, 1], [2, 3]]")
    EngineLogs: EngineLogsKeys | None = key(None, "every engine line of a game, one file per game")
    StartRetryS: Annotated[list[SecondsValue], Expected(
        "a list of seconds (0 to 86400) to wait before each new try", items=True)] = key(
        [5, 15, 40], "an engine start that failed is tried again after each of these waits; "
        "then its game is lost by rule 7.a (both engines: the game is held, tried again "
        "after their sum)")
    StartupTimeoutS: Annotated[TimeoutValue | None, Expected(L.TIMEOUT_EXPECTED)] = key(
        None, "seconds for each engine's handshake (default 30)")
    PgnComments: Literal["cutechess", "extended"] = key(
        "cutechess", "extended adds [%clk], [%emt], [%eval], seldepth, nodes, nps, tbhits, PV")
    PgnExtras: Annotated[list[Literal[PGN_EXTRAS]], Expected(  # type: ignore[valid-type]
        " | ".join(PGN_EXTRAS), items=True)] = key([], "any of ECO, Elo, TCEC")
    EpdOut: Text | None = key(None, "the final position of every game appended here")
    EnginesFile: Annotated[Any, _any({"type": "string"})] = key(
        None, "cutechess's engines.json: all its engines, or those Engines names")
    LivePgn: Text | None = key(None, "the current round's games rewritten here for relays")
    Ponder: bool = key(False, "engines think on the opponent's time")
    Restart: Annotated[Any, _any(L.RESTART_SCHEMA)] = key(
        "on", "on: fresh engine processes every game; off: kept between games")
    Ratings: RatingsKeys | None = key(None, "how ratings and standings compute Elo")
    Cluster: ClusterKeys | None = key(None, "play every game on a Dask cluster")
    Variant: Literal[VARIANTS] = key("standard", "standard, chess960 or dfrc")  # type: ignore[valid-type]
    Alerts: AlertsKeys | None = key(None, "where the runner sends alerts (none: no alerts)")
    Gpus: Annotated[Any, _any({"anyOf": [
        {"const": "auto"},
        {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True}]})] = key(
        None, "the GPU indices the event may use ([0, 1]), or auto (nvidia-smi -L); none: no "
        "GPU handling")


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
    return schema
