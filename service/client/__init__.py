"""What every ctxlamp process shares to find and talk to the service: one layer, standard library only.

The desktop imports this package and nothing else of `service/`; the CLI, the hook, the MCP server and
the status line use it too, so each rule is written once:

- `where`: the folders, by the cheap standard-library rules the status line can afford;
- `paths`: the same folders as the service lays them out (`app_paths`: platformdirs' full rules);
- `privdir`: folders and files ctxlamp creates are private to the user, never written through a link;
- `api`: the one client of the local HTTP API (`ApiClient`, `ApiError`, the event stream);
- `payloads`: the types of the API's answers (the OpenAPI document is made from them);
- `textsafe`: text from outside made safe for a terminal or a rich-text label;
- `start_failure`: why the service last failed to start, where the tray and `status` read it;
- `own_python`: the command line of a Python of ctxlamp's own, never with the user's folder on its path;
- `figures`: how money, counts and sizes read, in the tray, the window, the terminal and the status line alike;
- `terminal`: how wide the terminal is, and lines wrapped to it between words;
- `words`: the glossary's words for the lamp and its advice, as the terminal prints them.
"""
