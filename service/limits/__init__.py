"""The plan limits and figures Claude Code reports through its status line, as the service keeps
and answers them: the bounded record per session and account (`book`), when a window runs out at
the current pace (`runout`, pure), and the answers to POST /api/v1/statusline and GET
/api/v1/limits (`serve`). Runs inside the service; the command itself is `service/statusline/`.
"""
