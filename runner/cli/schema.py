"""`swiss-runner schema`: the config's JSON Schema (draft 2020-12), for editors and other
validators (docs/config.schema.json is this output; tests/test_config_schema.py keeps it so)."""

from __future__ import annotations

import argparse
import json

from runner.errors import EXIT_OK


def schema_text() -> str:
    from runner.config.keyschema import json_schema

    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def cli_schema(args: argparse.Namespace) -> int:
    print(schema_text(), end="", flush=True)
    return EXIT_OK
