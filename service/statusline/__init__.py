"""Claude Code's status line: the fast `ctxlamp statusline` command, the line it prints, and the
service's bounded record of the plan limits, cost and cache figures that Claude Code hands it.

The modules the command imports (`run`, `reading`, `line`, `where`) use the standard library only:
the command must start and answer in tens of milliseconds.
"""
