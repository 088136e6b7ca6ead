"""Engine processes: starting, probing, restarting and killing them (the one place for it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import chess.engine

from runner.config import EngineConfig


@dataclass
class ProbeResult:
    id_name: str = ""
    unknown_options: list[str] = field(default_factory=list)
    error: str = ""


def _popen(engine: EngineConfig, timeout: float) -> chess.engine.SimpleEngine:
    command = [engine.command, *engine.args]
    opener = (chess.engine.SimpleEngine.popen_uci if engine.protocol == "uci"
              else chess.engine.SimpleEngine.popen_xboard)
    return opener(command, timeout=timeout, cwd=engine.working_dir)


def probe_engine(engine: EngineConfig, timeout: float = 10.0) -> ProbeResult:
    """Start the engine, finish the handshake, report its name and unknown configured options."""
    try:
        simple = _popen(engine, timeout)
    except TimeoutError:
        return ProbeResult(error=f"no {engine.protocol} handshake within {timeout:g} s")
    except (OSError, chess.engine.EngineError) as exc:
        return ProbeResult(error=f"cannot start {engine.command!r}: {exc}")
    try:
        known = {name.lower() for name in simple.options}
        unknown = [o for o in engine.options if o.lower() not in known]
        return ProbeResult(id_name=simple.id.get("name", "?"), unknown_options=unknown)
    finally:
        try:
            simple.quit()
        except Exception:  # noqa: BLE001 - a dying engine must not hide the probe result
            simple.close()
