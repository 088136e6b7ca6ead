"""Unpack the 3-4-man Syzygy tables that python-chess's source package ships.

python-chess's sdist on PyPI carries ``data/syzygy/regular/*.rtbw|rtbz`` (the tables its own
tests use). This asks pip for the sdist of the installed python-chess version and unpacks
just those tables into DEST (default ``.cache/syzygy`` in the repository, git-ignored).
Nothing is committed; run it again any time (it does nothing when the tables are there).

    python scripts/get_syzygy.py [DEST]
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import chess

REPO = Path(__file__).resolve().parents[1]
MEMBER = "/data/syzygy/regular/"


def main() -> int:
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / ".cache" / "syzygy"
    if (dest / "KRvK.rtbw").is_file() and (dest / "KBNvK.rtbz").is_file():
        print(f"Syzygy tables already in {dest}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", "-d", tmp, f"chess=={chess.__version__}"],
                       check=True)
        archive = next(Path(tmp).glob("chess-*.tar.gz"))
        dest.mkdir(parents=True, exist_ok=True)
        count = 0
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                name = member.name
                if MEMBER in name and name.endswith((".rtbw", ".rtbz")) and member.isfile():
                    data = tar.extractfile(member)
                    assert data is not None
                    (dest / Path(name).name).write_bytes(data.read())
                    count += 1
    if count == 0:
        print(f"error: {archive.name} holds no Syzygy tables under data/syzygy/regular",
              file=sys.stderr)
        return 1
    print(f"unpacked {count} Syzygy table files into {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
