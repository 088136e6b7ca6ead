"""`swiss-runner engines-json FILE`: print cutechess's engines.json as the config's Engines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runner.config.enginesjson import EnginesFileError, engines_yaml, read_engines_json
from runner.errors import EXIT_BAD_INPUT, EXIT_OK


def cli_engines_json(args: argparse.Namespace) -> int:
    try:
        engines = read_engines_json(Path(args.file))
    except EnginesFileError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"{args.file}: {len(exc.problems)} problem(s); nothing was printed", file=sys.stderr)
        return EXIT_BAD_INPUT
    names = set(args.engine or ())
    unknown = names - {e["Name"] for e in engines}
    if unknown:
        print(f"error: {args.file}: no engine named {', '.join(sorted(map(repr, unknown)))} "
              f"(it has {', '.join(repr(e['Name']) for e in engines)})", file=sys.stderr)
        return EXIT_BAD_INPUT
    if names:
        engines = [e for e in engines if e["Name"] in names]
    sys.stdout.write(f"# from {args.file} (cutechess engines.json)\n" + engines_yaml(engines))
    return EXIT_OK
