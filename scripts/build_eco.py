"""Generate runner/domain/eco.tsv.gz (position -> ECO code) from Scid's ECO classification.

Usage: python scripts/build_eco.py [--eco /usr/share/scid/data/scid.eco] [--out PATH]

The input is ``scid.eco`` from the Debian package ``scid-data`` (scripts/install.sh --test installs
it). Each of its lines ``B90a "Sicilian: Najdorf" 1.e4 c5 2.Nf3 d6 ... *`` is played out on a
board; the table maps the EPD of the final position to the three-character ECO code. When
several lines reach one position the first in the file wins (Scid lists the main code first).
The output is sorted and gzipped with a fixed timestamp, so a rebuild is byte-identical.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parents[1]
_ENTRY = re.compile(r'([A-E]\d\d)[a-z]?\d*\s+"[^"]*"\s+([^*]*)\*')
_NUMBER = re.compile(r"^\d+\.+")


def build(eco_path: Path) -> dict[str, str]:
    lines = eco_path.read_text(encoding="latin-1").splitlines()
    text = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    codes: dict[str, str] = {}
    for match in _ENTRY.finditer(text):
        code, movetext = match.groups()
        board = chess.Board()
        try:
            for token in movetext.split():
                san = _NUMBER.sub("", token)
                if san:
                    board.push_san(san)
        except ValueError as exc:
            raise SystemExit(f"{eco_path}: line {code} {movetext.strip()!r}: {exc}") from None
        codes.setdefault(board.epd(), code)
    return codes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eco", default="/usr/share/scid/data/scid.eco")
    parser.add_argument("--out", default=str(ROOT / "runner" / "domain" / "eco.tsv.gz"))
    args = parser.parse_args()
    if not Path(args.eco).is_file():
        print(f"{args.eco}: not found; install Debian's scid-data (scripts/install.sh --test does)",
              file=sys.stderr)
        return 2
    codes = build(Path(args.eco))
    body = "".join(f"{epd}\t{code}\n" for epd, code in sorted(codes.items())).encode("ascii")
    Path(args.out).write_bytes(gzip.compress(body, compresslevel=9, mtime=0))
    print(f"{args.out}: {len(codes)} positions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
