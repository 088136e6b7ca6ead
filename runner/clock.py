"""The one way the runner writes a moment: ISO 8601 in UTC with milliseconds,
``2026-11-26T18:20:01.123+00:00`` (runner.domain.events.parse_utc reads it back)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_text(moment: datetime) -> str:
    """``moment`` (aware) in UTC, ISO 8601 with milliseconds and ``+00:00``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def utc_now() -> str:
    """Now, as :func:`utc_text` writes it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
