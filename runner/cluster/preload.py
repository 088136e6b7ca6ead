"""`dask worker SCHEDULER --resources game=1 --preload runner.cluster.preload`: a plain Dask
worker that plays swiss-runner games like `swiss-runner worker` (docs/cluster.md)."""

from __future__ import annotations

from typing import Any


async def dask_setup(worker: Any) -> None:
    # late: `dask worker --preload` imports this module before distributed is ready for it
    from runner.cluster.task import EngineProbes

    await worker.plugin_add(EngineProbes(), name="swiss-runner")
