"""Opening books (PGN, EPD, polyglot) and the persisted assignment of openings to matches."""

from __future__ import annotations

from runner.config import OpeningsConfig


def check_book(config: OpeningsConfig) -> list[str]:
    """Problems found in the configured book (empty when it can be used)."""
    try:
        text = config.file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [f"{config.file}: cannot read opening book: {exc}"]
    return [] if text.strip() else [f"{config.file}: the opening book is empty"]
