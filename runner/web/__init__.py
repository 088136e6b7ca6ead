"""The live web dashboard (`swiss-runner serve`): a read-only ASGI app on the event's state.

Needs the ``web`` extra (starlette, uvicorn, jinja2): ``bash scripts/install.sh`` (from the clone)
installs it. docs/dashboard.md describes the pages, the JSON and the security settings.
"""
