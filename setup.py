"""The compiled parts: the engine pipes (runner.play._pipes, docs/referee.md "The engine's
pipes") and the FEN's piece placement (runner.domain._fen, runner/domain/fen.py).

Everything else is in pyproject.toml. Each extension is optional: where it cannot be built
(no C compiler or no Python headers) the install goes on and the runner uses its pure-Python
path (runner.play.pipes reads engines' pipes in Python; runner.domain.fen writes the FEN).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("runner.play._pipes", ["runner/play/_pipes.c"], optional=True,
                             extra_compile_args=["-O2", "-Wall"]),
                   Extension("runner.domain._fen", ["runner/domain/_fen.c"], optional=True,
                             extra_compile_args=["-O2", "-Wall"])])
