"""The compiled engine pipes (runner.play._pipes, docs/referee.md "The engine's pipes").

Everything else is in pyproject.toml. The extension is optional: where it cannot be built
(no C compiler or no Python headers) the install goes on and the runner reads engines'
pipes in Python (runner.play.pipes).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("runner.play._pipes", ["runner/play/_pipes.c"], optional=True,
                             extra_compile_args=["-O2", "-Wall"])])
