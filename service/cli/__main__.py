"""`python -m service.cli`: the same as the `ctxlamp` console script."""
from service.cli import entry

entry()
