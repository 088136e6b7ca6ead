"""The event's configuration: the YAML loader with precise messages, the typed result, and
the event fingerprint that ties a state database to the config that started it."""

from runner.config.loader import advice, load_config, resolve_command, tablebase_gap
from runner.config.typed import (
    ALERT_KINDS,
    DEFAULT_TIEBREAKS,
    ENGINE_SEARCH_DIRS,
    TIEBREAKS,
    AdjudicationConfig,
    AlertsConfig,
    ClusterConfig,
    Config,
    EngineConfig,
    InterruptionConfig,
    OpeningsConfig,
    SwissOptions,
    TablebaseConfig,
    TcecDrawRule,
    TcecWinRule,
)
from runner.errors import ConfigError

__all__ = [
    "ALERT_KINDS", "DEFAULT_TIEBREAKS", "ENGINE_SEARCH_DIRS", "TIEBREAKS", "AdjudicationConfig",
    "AlertsConfig", "ClusterConfig", "Config",
    "ConfigError", "EngineConfig", "InterruptionConfig", "OpeningsConfig", "SwissOptions", "TablebaseConfig",
    "TcecDrawRule", "TcecWinRule", "advice", "load_config", "resolve_command",
    "tablebase_gap",
]
