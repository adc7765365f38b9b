"""The project's own stand-in for the Anthropic Messages API, so the real Claude Code CLI can run with no network.

It only decides what "the model" says (from a scenario's script) and reports token usage that is
consistent with prompt caching; the CLI does all the rest (tools, transcripts, hooks, MCP, compaction).
`server` is the HTTP API on 127.0.0.1, `scenario` runs `claude -p` through a scenario and collects what
it wrote, `tmux` drives the CLI interactively, `make_fixtures` regenerates tests/fixtures/.
"""
