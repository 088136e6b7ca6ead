"""The typed configuration of an event: what `load_config` returns (plain frozen dataclasses).

Pure types with no YAML, file or engine access, so that rules, backends and workers on other
machines can use them without the loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.domain.timecontrol import TimeControl

# Debian installs chess engines in /usr/games, which is not on every PATH (cron, CI, su).
ENGINE_SEARCH_DIRS = ("/usr/games", "/usr/local/games")

TIEBREAKS = (
    "SonnebornBerger",
    "RMobility",
    "Wins",
    "DirectEncounter",
    "Buchholz",
    "MedianBuchholz",
    "ProgressiveScore",
    "BlackGames",
)
DEFAULT_TIEBREAKS = ("SonnebornBerger", "RMobility", "Wins", "DirectEncounter")


@dataclass(frozen=True)
class EngineConfig:
    name: str
    command: str  # absolute path of the executable
    args: tuple[str, ...] = ()
    protocol: str = "uci"  # uci | xboard
    rating: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    nodes: int | None = None
    depth: int | None = None
    movetime_ms: int | None = None
    working_dir: str | None = None
    command_as_written: str = ""
    startup_timeout_s: float | None = None  # handshake/ready time-out; None = the referee's 30 s
    ponder: bool = False  # Ponder: think on the opponent's time (docs/operators.md)
    restart: bool = True  # Restart: on (a fresh process every game) | off (kept: runner.play.keep)
    start_retry_s: tuple[float, ...] = ()  # StartRetryS: waits before each new try of a start
    gpus: int = 0  # Gpus: devices this engine needs for a game (docs/gpus.md)
    gpu_devices: tuple[int, ...] = ()  # GpuDevices: the devices it is pinned to (() = any)
    env: tuple[tuple[str, str], ...] = ()  # set in its process's environment (its GPUs)

    def __hash__(self) -> int:  # options is a dict; names are unique in a config
        return hash(self.name)


@dataclass(frozen=True)
class SwissOptions:
    games_per_match: int = 2
    rounds: int = 11
    seed_group_count: int = 1
    seeding: str = "groups"  # groups | random | listed
    random_seed: int = 0
    double_round_schedule: str = "split"  # split | consecutive
    unique_per_match_only: bool = True
    random_openings: bool = True
    allow_extra_pairs_on_tie: bool = False
    max_extra_pairs: int = 10
    state_path: Path = Path("state/swiss_state.json")


@dataclass(frozen=True)
class OpeningsConfig:
    file: Path | None  # None: numbered Chess960 positions (``positions``)
    format: str  # pgn | epd | polyglot | positions
    plies: int = 0  # 0 = whole line (pgn) / required > 0 for polyglot
    order: str = "random"  # sequential | random
    variant: str = "standard"  # the event's Variant (runner.domain.variant)
    # Openings.Positions: (White's number, Black's number or None = White's) per start;
    # None with format "positions": ``Positions: random`` (drawn from the RandomSeed)
    positions: tuple[tuple[int, int | None], ...] | None = None


@dataclass(frozen=True)
class TcecDrawRule:
    max_pawns: int = 8
    max_pieces: int = 8  # pieces other than pawns, kings included (as TCEC counts)
    score_cp: int = 20
    plies: int = 10


@dataclass(frozen=True)
class TcecWinRule:
    score_cp: int = 1000
    plies: int = 10


@dataclass(frozen=True)
class TablebaseConfig:
    paths: tuple[Path, ...] = ()
    max_pieces: int = 6
    ignore50: bool = False


@dataclass(frozen=True)
class AdjudicationConfig:
    tcec_draw: TcecDrawRule | None = None
    tcec_win: TcecWinRule | None = None
    tablebases: TablebaseConfig | None = None
    max_moves: int = 0  # 0 = off; full moves


@dataclass(frozen=True)
class RatingsConfig:
    """The ``Ratings`` block: how `ratings` and `standings` compute Elo (docs/ratings.md)."""

    anchor: str | None = None  # None: the pool average is ``elo``
    elo: float = 0.0  # rating of the anchor, or of the pool average
    white_advantage: float | None = 0.0  # None: fitted; else fixed Elo (0: Ordo's default)
    draw_rate: float | None = None  # None: fitted; else fixed percent
    simulations: int = 1000
    seed: int = 0
    confidence: float = 95.0


@dataclass(frozen=True)
class InterruptionConfig:
    """What becomes of a game interrupted by a crash or an abort (TCEC rule 7.c)."""

    mode: str = "resume"  # resume (rule 7.c) | replay (from move one)
    adjudicate: bool = True  # apply 7.c.ii-iv before resuming
    win_score_cp: int = 1000  # ii: both engines' last scores >= this for the same side
    draw_score_cp: int = 15  # iii: both |score| <= this ...
    draw_moves: int = 35  # ... and both engines have made this many moves
    tablebase_pieces: int = 7  # iv: this many men or fewer, with the configured Syzygy tables
    compensation_s: float | None = None  # v: added to both clocks; None = 2% of the base, 1..60 s

    def compensation(self, base: float | None) -> float:
        if self.compensation_s is not None:
            return self.compensation_s
        if base is None:
            return 0.0
        return min(60.0, max(1.0, round(base * 0.02, 1)))


@dataclass(frozen=True)
class ClusterConfig:
    """The ``Cluster`` block: play every game as a task of a Dask scheduler (docs/cluster.md)."""

    scheduler: str  # tcp://HOST:PORT or tls://HOST:PORT
    wait_s: float = 600.0  # how long the runner waits for a lost scheduler before it stops
    overdue_s: float = 60.0  # a worker silent this long past the mover's clock is cut off
    lease_s: float | None = None  # a worker not hearing the runner this long stops (None: 3/4)
    retry_refused_s: float = 600.0  # a worker that refused an engine is asked again after this
    max_lost_attempts: int = 3  # a game that loses its worker this often stops the event
    insecure: bool = False  # a tcp:// scheduler off loopback is allowed (a private network)


@dataclass(frozen=True)
class AffinityConfig:
    """CPU cores per concurrent game slot (both engines of a game share their slot's cores)."""

    mode: str  # auto | explicit
    slots: tuple[tuple[int, ...], ...]  # slot i -> its cores, disjoint


@dataclass(frozen=True)
class EngineLogsConfig:
    dir: Path
    keep: str = "failures"  # failures | all


PGN_EXTRAS = ("ECO", "Elo", "TCEC")

# what the Alerts block can report (runner.service.views.alerts, docs/alerts.md)
ALERT_KINDS = ("event_stopped", "event_failed", "engine_crashed", "engine_stalled",
               "engine_forfeit", "worker_lost", "disk_low", "round_ended", "event_ended",
               "td_decision", "game_held", "td_failed", "gpu_failed")


@dataclass(frozen=True)
class AlertsConfig:
    """The ``Alerts`` block: run a command and/or POST JSON to a URL on events worth a person's
    attention (docs/alerts.md). Not part of the event's fingerprint: it may change between
    runs."""

    command: tuple[str, ...] | None = None  # Command: the JSON payload on its stdin
    url: str | None = None  # Url: http:// or https://; the JSON POSTed to it
    timeout_s: float = 10.0  # TimeoutS: per attempt
    retries: int = 3  # Retries: attempts after the first, with back-off
    queue_size: int = 100  # QueueSize: the oldest dropped when full (counted and reported)
    disk_free_mb: int = 1024  # DiskFreeMb: disk_low under this many MB free; 0 = off
    on: tuple[str, ...] = ALERT_KINDS  # On: the kinds sent


@dataclass(frozen=True)
class Config:
    path: Path
    event: str
    site: str
    swiss: SwissOptions
    time_control: TimeControl
    time_margin_ms: int
    concurrency: int
    backend: str
    cutechess_path: str
    pgn_out: Path
    database: Path
    openings: OpeningsConfig | None
    adjudication: AdjudicationConfig
    engines: tuple[EngineConfig, ...]
    tiebreaks: tuple[str, ...]
    raw: dict[str, Any]
    snapshot_interval_s: float = 1.0  # the JSON state is rewritten at most this often in play
    interruption: InterruptionConfig = field(default_factory=InterruptionConfig)
    ratings: RatingsConfig = field(default_factory=RatingsConfig)
    affinity: AffinityConfig | None = None
    engine_logs: EngineLogsConfig | None = None
    startup_timeout_s: float | None = None  # global StartupTimeoutS (engines carry the result)
    start_retry_s: tuple[float, ...] = (5.0, 15.0, 40.0)  # StartRetryS (engines carry it)
    pgn_comments: str = "cutechess"  # cutechess | extended
    pgn_extras: tuple[str, ...] = ()  # of PGN_EXTRAS
    epd_out: Path | None = None
    live_pgn: Path | None = None  # LivePgn / run --live-pgn: the live PGN file (docs/broadcast.md)
    engines_file: Path | None = None
    cluster: ClusterConfig | None = None  # None: every game on this machine
    variant: str = "standard"  # standard | chess960 | dfrc (runner.domain.variant)
    alerts: AlertsConfig | None = None  # None: no alerts (runner.service.views.alerts)
    gpus: tuple[int, ...] | None = None  # Gpus: the devices the event may use (None: no GPU handling)

    def engine(self, name: str) -> EngineConfig:
        for engine in self.engines:
            if engine.name == name:
                return engine
        raise KeyError(name)


