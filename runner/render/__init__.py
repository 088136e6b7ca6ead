"""What the runner shows people: tables as text, Markdown, CSV and JSON (never the rules
themselves: runner.domain computes, this renders)."""
