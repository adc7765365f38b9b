"""Connections to the team database and what their failures mean to a user.

Every failure becomes one of two exceptions, which the commands turn into exit
codes: `Unreachable` (3: no server, network, server gone mid-push) and
`Refused` (4: the server said no: a role writing as another member, bad
password, missing grants or schema).
"""
from __future__ import annotations

import getpass
import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from service.redact import redact
from service.team import passfile

SCHEMA = "ctxlamp_team"
CONNECT_TIMEOUT_S = 5
# no statement of a ctxlamp session waits on a lock, or runs, without end: a member holding the team's tables
# (LOCK TABLE, a transaction left open) delays the others' reports and pushes by LOCK_TIMEOUT_S at most
LOCK_TIMEOUT_S = 10
STATEMENT_TIMEOUT_S = 120
# every ctxlamp session on the team database resolves names in the system catalog only: objects a
# member put in another schema (`public` on PostgreSQL 12-14) are never called by somebody else's session
SAFE_SEARCH_PATH = "pg_catalog,pg_temp"
PASSFILE_NAME = "pgpass"
# sslrootcert=system (the operating system's CAs) came with libpq 16
SYSTEM_CAS_LIBPQ = 160000

# SQLSTATE classes a server answers with when it refuses (not when it is away)
_REFUSED_CLASSES = ("28", "42", "23", "3D", "3F", "44")
_TIMED_OUT = {"55P03": f"a lock was not granted within {LOCK_TIMEOUT_S} s (another session holds the team's tables)",
              "57014": f"a statement ran longer than {STATEMENT_TIMEOUT_S} s"}


class TeamError(RuntimeError):
    exit_code = 1


class Unreachable(TeamError):
    """The server cannot be reached, or went away during the work."""

    exit_code = 3


class Refused(TeamError):
    """The server answered and refused (permissions, row-level security, authentication)."""

    exit_code = 4


def where(url: str) -> str:
    """host:port/dbname of a URL, for messages (never the password, even of a URL no parser accepts)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port
    except ValueError:
        return "the team server (its URL cannot be read)"
    return redact(f"{host}{':' + str(port) if port else ''}{parts.path or '/'}", url)


def classify(exc: BaseException, url: str) -> TeamError:
    """The user's view of a driver exception (its text redacted: libpq may quote the whole URL)."""
    import psycopg2

    code = getattr(exc, "pgcode", None) or ""
    said = str(exc).split("\nCONTEXT:")[0]  # not the body of the server function it happened in
    text = redact(" ".join(said.split()) or type(exc).__name__, url)
    if code in _TIMED_OUT and "due to user request" not in text:
        return Unreachable(f"{where(url)} busy: {_TIMED_OUT[code]}; nothing was changed, try again later")
    if code == "42501" and "create role" in text:
        return Refused(f"{where(url)} refused: {text}: {createrole_hint(url)}")
    if code[:2] in _REFUSED_CLASSES:
        return Refused(f"{where(url)} refused: {text}")
    if "password authentication failed" in text or "does not exist" in text:
        return Refused(f"{where(url)} refused: {text}")
    if isinstance(exc, psycopg2.ProgrammingError) and not code:
        return TeamError(f"the team URL cannot be read: {text}")
    if isinstance(exc, (psycopg2.OperationalError, psycopg2.InterfaceError)):
        return Unreachable(f"{where(url)} unreachable: {text}")
    return TeamError(f"{where(url)}: {text}")


def createrole_hint(url: str) -> str:
    """What an owner without CREATEROLE is missing, as the line an administrator runs."""
    try:
        user = unquote(urlsplit(url).username or "") or "the owner"
    except ValueError:
        user = "the owner"
    return (f"the owner role needs CREATEROLE to give each member a role of its own; as an administrator run: "
            f"ALTER ROLE {_ident(user)} CREATEROLE;")


def _ident(name: str) -> str:
    """A role name as SQL writes it (quoted only when it has to be)."""
    if name.replace("_", "a").isalnum() and name.islower() and not name[:1].isdigit():
        return name
    return '"' + name.replace('"', '""') + '"'


def default_passfile() -> Path:
    """Where `team member add` keeps passwords and connections look for them: PGPASSFILE, else ctxlamp's config dir."""
    env = os.environ.get("PGPASSFILE")
    if env:
        return Path(env).expanduser()
    from service.client.paths import app_paths

    return app_paths().config / PASSFILE_NAME


def passfile_key(params: dict[str, str]) -> tuple[str, str, str, str]:
    """(host, port, database, user) as libpq matches a password-file line for a connection's parameters."""
    host = (params.get("host") or os.environ.get("PGHOST") or "").split(",")[0]
    if not host or host.startswith(("/", "@")):
        host = "localhost"  # a Unix socket matches "localhost"
    port = (params.get("port") or os.environ.get("PGPORT") or "5432").split(",")[0] or "5432"
    user = params.get("user") or os.environ.get("PGUSER") or getpass.getuser()
    return host, port, params.get("dbname") or os.environ.get("PGDATABASE") or user, user


def is_loopback(host: str) -> bool:
    """A Unix socket, localhost or a loopback address: the connection never leaves the machine."""
    host = host.strip()
    if not host or host.startswith(("/", "@")):
        return True
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _hosts(params: dict[str, str]) -> list[str]:
    hosts = (params.get("host") or os.environ.get("PGHOST") or "").split(",")
    addrs = (params.get("hostaddr") or os.environ.get("PGHOSTADDR") or "").split(",")
    return [h for h in hosts + addrs if h.strip()] or [""]


def tls_options(params: dict[str, str], url: str) -> dict[str, str]:
    """sslmode=verify-full for a host beyond this machine when the URL chose no sslmode (never a silent plain text).

    The certificate is checked against the URL's sslrootcert, libpq's root.crt,
    or the system's CAs (libpq 16 and later); with none of them the connection
    is refused with the line to add.
    """
    from psycopg2.extensions import libpq_version

    if params.get("sslmode") or os.environ.get("PGSSLMODE") or all(is_loopback(h) for h in _hosts(params)):
        return {}
    if params.get("sslrootcert") or os.environ.get("PGSSLROOTCERT") or _libpq_root_crt().is_file():
        return {"sslmode": "verify-full"}
    if libpq_version() >= SYSTEM_CAS_LIBPQ:
        return {"sslmode": "verify-full", "sslrootcert": "system"}
    raise TeamError(f"{where(url)} is not on this machine and the URL says nothing of TLS: add "
                    "sslmode=verify-full&sslrootcert=/path/to/ca.pem to its query (this libpq cannot use the "
                    "system's CAs), or sslmode=disable to send the figures in plain text knowingly")


def _libpq_root_crt() -> Path:
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", "")) / "postgresql" / "root.crt"
    return Path.home() / ".postgresql" / "root.crt"


def connection_params(url: str) -> dict[str, str]:
    """What `connect` adds to the URL: a safe search_path, lock and statement timeouts, a connect timeout, the
    password file, TLS for remote hosts."""
    import psycopg2
    from psycopg2.extensions import parse_dsn

    if not url.startswith(("postgresql://", "postgres://")):
        raise TeamError("the team url must start with postgresql://")
    try:
        params = parse_dsn(url)
    except psycopg2.Error as exc:
        raise classify(exc, url) from None
    extra = {"options": f"{params.get('options', '')} -c search_path={SAFE_SEARCH_PATH} "
                        f"-c lock_timeout={LOCK_TIMEOUT_S}s -c statement_timeout={STATEMENT_TIMEOUT_S}s".strip()}
    if "connect_timeout" not in params:
        extra["connect_timeout"] = str(CONNECT_TIMEOUT_S)
    if "password" not in params and "passfile" not in params and not os.environ.get("PGPASSFILE"):
        ours = default_passfile()  # used when it knows this connection; else libpq's own (~/.pgpass)
        if passfile.lookup(ours, *passfile_key(params)) is not None:
            extra["passfile"] = str(ours)
    extra.update(tls_options(params, url))
    return extra


def connect(url: str) -> Any:
    """A psycopg2 connection: the URL as libpq reads it, with `connection_params` added."""
    import psycopg2

    extra = connection_params(url)
    try:
        return psycopg2.connect(url, **extra)
    except psycopg2.Error as exc:
        raise classify(exc, url) from None


@contextmanager
def transaction(url: str) -> Iterator[Any]:
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
