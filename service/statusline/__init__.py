"""Claude Code's status line, the command it runs: `ctxlamp statusline` reads what Claude Code
reports on stdin, hands it to the service and prints the line (`run`, `line`, `reading`,
`fastjson`, `fast`), and its `statusLine` entry in Claude Code's settings (`settings`).

It runs in its own short process, once per update: the modules it imports use the standard library
only (and `service/client/`'s cheap folder rules), so it starts and answers in tens of
milliseconds. What the service keeps of these reports is `service/limits/`.
"""
