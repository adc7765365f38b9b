"""What ctxlamp adds to Claude Code: settings install/uninstall, the SessionStart hook, the stdio MCP server."""
