"""The config file as YAML: read with bounds (size, nesting, alias bombs), duplicate keys
refused, and the line of every key path recorded for the loader's messages."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that records the line of every key path and rejects duplicate keys.

    Booleans as YAML 1.2 reads them: only ``true``/``false`` (any case); ``On``, ``Off``,
    ``Yes``, ``No``, ``y``, ``n`` are strings (the key ``Alerts.On``, docs/alerts.md).

    Composing is bounded: at most MAX_YAML_NODES nodes written in the file and
    MAX_YAML_DEPTH levels of nesting (aliases are expanded by :func:`_check_node_budget`).
    """

    _depth = 0
    _nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:  # type: ignore[override]
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise YamlLimit(f"nested more than {MAX_YAML_DEPTH} levels deep (line "
                                f"{self.peek_event().start_mark.line + 1})")
            if self._nodes > MAX_YAML_NODES:
                raise YamlLimit(f"more than {MAX_YAML_NODES} values; a config needs a few hundred")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_BOOL_TAG = "tag:yaml.org,2002:bool"
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_UniqueKeyLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"), list("tTfF"))


def _compose_lines(node: yaml.Node, path: str, lines: dict[str, int], dups: list[str]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = f"{path}.{key}" if path else key
            if key in seen:
                dups.append(f"{child} (line {key_node.start_mark.line + 1})")
            seen.add(key)
            _compose_lines(value_node, child, lines, dups)
            lines[child] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _compose_lines(item, f"{path}[{i}]", lines, dups)


# A config is a few kilobytes; these bounds keep a hostile or mistaken file (a log, a binary,
# an alias bomb: a few hundred bytes naming millions of nodes) from hanging the loader.
MAX_CONFIG_BYTES = 256 * 1024
MAX_YAML_NODES = 10_000  # written or after expanding aliases (a 64-engine config has ~1500)
MAX_YAML_DEPTH = 40


class YamlLimit(Exception):
    """The YAML document is too big, too deep or recursive (message says which)."""


def _check_node_budget(root: yaml.Node) -> None:
    """Count the nodes of the document as a reader would see them (every alias expanded);
    refuse recursive aliases, nesting deeper than MAX_YAML_DEPTH and more than
    MAX_YAML_NODES nodes. Stops at the first excess, so an alias bomb costs microseconds."""
    count = 0
    on_path: set[int] = set()

    def visit(node: yaml.Node, depth: int) -> None:
        nonlocal count
        count += 1
        if count > MAX_YAML_NODES:
            raise YamlLimit(f"more than {MAX_YAML_NODES} values once aliases are expanded "
                            "(an alias bomb?); a config needs a few hundred")
        if depth > MAX_YAML_DEPTH:
            raise YamlLimit(f"nested more than {MAX_YAML_DEPTH} levels deep (line "
                            f"{node.start_mark.line + 1})")
        if isinstance(node, yaml.ScalarNode):
            return
        if id(node) in on_path:
            raise YamlLimit(f"a recursive alias (line {node.start_mark.line + 1}): a value "
                            "that contains itself")
        on_path.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                visit(key_node, depth + 1)
                visit(value_node, depth + 1)
        else:
            for item in node.value:
                visit(item, depth + 1)
        on_path.discard(id(node))

    visit(root, 0)


def read_config_text(path: Path) -> str:
    """The config's text; OSError/ValueError/YamlLimit explain why it cannot be read."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused right after
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise YamlLimit("not a regular file (a directory, device or pipe); expected a "
                            "YAML config file")
        os.set_blocking(fd, True)
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise YamlLimit(f"larger than {MAX_CONFIG_BYTES // 1024} KiB; is this really a config "
                        "file?")
    if b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        raise YamlLimit(f"line {line}: a NUL byte; a config is YAML text (is this a binary "
                        "file?)")
    return data.decode("utf-8")


def load_yaml(path: Path) -> tuple[Any, dict[str, int], list[str]]:
    text = read_config_text(path)
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        dups: list[str] = []
        if node is None:
            return None, lines, dups
        _check_node_budget(node)
        _compose_lines(node, "", lines, dups)
        return loader.construct_document(node), lines, dups
    finally:
        loader.dispose()



def code_of(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character)


def line_at(path: Path, position: int) -> int:
    """The line of character ``position`` of the (already read, UTF-8) config file."""
    try:
        return read_config_text(path)[:position].count("\n") + 1
    except (OSError, ValueError, YamlLimit):
        return 1

