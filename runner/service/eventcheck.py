"""Is this config the event recorded in its database? (TCEC rule 8: an event does not change
once started.) The check `run`, `status`, `standings`, `validate` and `td` make."""

from __future__ import annotations

from runner.config import Config
from runner.config.fingerprint import event_fingerprint, fingerprint_changes, without_binaries


def other_event(config: Config, recorded: dict | None) -> str | None:
    """Why ``config`` does not describe the event recorded with ``recorded`` (the list of
    what changed, as `run` refuses it), or None. A file this user cannot read (an engine
    binary, the book: `status` by another user) counts as unchanged: `run` checks it."""
    if not recorded:
        return None
    current = without_binaries(event_fingerprint(config), {
        name for name, e in recorded.get("Engines", {}).items()
        if isinstance(e, dict) and "binary_sha256" not in e})
    for name, engine in current.get("Engines", {}).items():
        old = recorded.get("Engines", {}).get(name)
        if isinstance(old, dict) and str(engine.get("binary_sha256")).startswith("unreadable"):
            engine["binary_sha256"] = old.get("binary_sha256")
    book, old_book = current.get("Openings"), recorded.get("Openings")
    if isinstance(book, dict) and isinstance(old_book, dict) and str(
            book.get("sha256")).startswith("unreadable"):
        book["sha256"] = old_book.get("sha256")
    changes = fingerprint_changes(recorded, current)
    if not changes:
        return None
    return "\n".join([
        f"{config.path}: this config does not describe the event recorded in "
        f"{config.database} (an event cannot change once started, TCEC rule 8: `run` "
        "refuses it, and its rounds, games and engines would be shown against the wrong "
        "settings). Changed:",
        *(f"  {change}" for change in changes),
        "Restore the old settings, or point SwissOptions.StatePath (and Database) somewhere "
        "else for another event."])


__all__ = ["other_event"]
