"""Games on several machines: a Dask scheduler hands games to `swiss-runner worker` processes.

The runner stays the only writer of the store: it is a Dask client (runner.cluster.client)
that submits each game as a task needing one ``game`` resource; the task
(runner.cluster.task) plays it on a worker with the built-in referee, next to the engines,
and streams the game's events back with ``Worker.log_event`` on :data:`TOPIC`. Every message
carries the runner's epoch and the attempt's token, so events of an earlier run or of a lost
attempt are ignored. docs/cluster.md describes the whole design.

Nothing here is imported unless a ``Cluster`` block or ``run --scheduler`` asks for it.
"""

from __future__ import annotations

TOPIC = "swiss-runner-games"  # Worker.log_event topic of the game streams
RESOURCE = "game"  # the worker resource one game needs (swiss-runner worker --slots N)
PLUGIN = "swiss-runner"  # name of the WorkerPlugin holding a worker's engine probes
