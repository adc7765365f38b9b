"""Connections to the team database and what their failures mean to a user.

Every failure becomes one of two exceptions, which the commands turn into exit
codes: `Unreachable` (3: no server, network, server gone mid-push) and
`Refused` (4: the server said no: a role writing as another member, bad
password, missing grants or schema).
"""
from __future__ import annotations

from contextlib import contextmanager
from urllib.parse import urlsplit

SCHEMA = "ctxlamp_team"
CONNECT_TIMEOUT_S = 5

# SQLSTATE classes a server answers with when it refuses (not when it is away)
_REFUSED_CLASSES = ("28", "42", "23", "3D", "3F", "44")


class TeamError(RuntimeError):
    exit_code = 1


class Unreachable(TeamError):
    """The server cannot be reached, or went away during the work."""

    exit_code = 3


class Refused(TeamError):
    """The server answered and refused (permissions, row-level security, authentication)."""

    exit_code = 4


def where(url: str) -> str:
    """host:port/dbname of a URL, for messages (never the password)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    return f"{host}{':' + str(parts.port) if parts.port else ''}{parts.path or '/'}"


def _with_timeout(url: str) -> str:
    if "connect_timeout=" in url:
        return url
    return url + ("&" if "?" in url else "?") + f"connect_timeout={CONNECT_TIMEOUT_S}"


def classify(exc: BaseException, url: str) -> TeamError:
    """The user's view of a driver exception."""
    import psycopg2

    code = getattr(exc, "pgcode", None) or ""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if code[:2] in _REFUSED_CLASSES:
        return Refused(f"{where(url)} refused: {text}")
    if "password authentication failed" in text or "does not exist" in text:
        return Refused(f"{where(url)} refused: {text}")
    if isinstance(exc, (psycopg2.OperationalError, psycopg2.InterfaceError)):
        return Unreachable(f"{where(url)} unreachable: {text}")
    return TeamError(f"{where(url)}: {text}")


def connect(url: str):
    """A psycopg2 connection (libpq reads the URL: TLS options such as sslmode pass through)."""
    import psycopg2

    if not url.startswith(("postgresql://", "postgres://")):
        raise TeamError(f"the team url must start with postgresql:// (got {url.split(':', 1)[0]}:...)")
    try:
        return psycopg2.connect(_with_timeout(url))
    except psycopg2.Error as exc:
        raise classify(exc, url) from None


@contextmanager
def transaction(url: str):
    """A cursor in one transaction: committed when the block ends, rolled back (and classified) on failure."""
    import psycopg2

    conn = connect(url)
    try:
        with conn:
            with conn.cursor() as cur:
                yield cur
    except psycopg2.Error as exc:
        raise classify(exc, url) from None
    finally:
        try:
            conn.close()
        except Exception:  # a server gone mid-work: nothing left to close
            pass
