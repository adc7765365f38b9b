"""Device files sealed with a passphrase (optional: `pip install ctxlamp[encrypt]`, the `cryptography`
package): for a sync folder in someone else's cloud.

The key is derived from the passphrase with scrypt (slow and memory-hard: 2^15 x 8 x 128 bytes = 32 MB,
about 0.1 s a file), under a random salt per write; the figures are sealed with AES-256-GCM, so a file
changed by anyone without the passphrase is refused, never read. The parameters another device's file
names are range-checked before any work: a file cannot make this device derive for minutes.
The passphrase is kept on each device in `sync-passphrase` in ctxlamp's config folder (mode 0600),
never in the folder and never in config.toml.
"""
from __future__ import annotations

import base64
import os
from pathlib import Path

from service.sync.fileformat import BadFile

FORMAT = "ctxlamp-sync-sealed"
VERSION = 1
PASS_FILE = "sync-passphrase"
N, R, P = 2 ** 15, 8, 1
N_RANGE = (2 ** 14, 2 ** 17)  # what a reader derives for at most: 128 MB, well under a second or two
SALT_BYTES, NONCE_BYTES = 16, 12


class NoCipher(RuntimeError):
    """The `cryptography` package is not installed: the message says how to get it."""


def primitives():
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
    except ImportError:
        raise NoCipher("encrypted sync files need the cryptography package: pip install 'ctxlamp[encrypt]'") \
            from None
    return AESGCM, Scrypt


def _key(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    _aes, scrypt = primitives()
    return scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))


def seal(plain: bytes, passphrase: str) -> bytes:
    import orjson

    aes, _scrypt = primitives()
    salt, nonce = os.urandom(SALT_BYTES), os.urandom(NONCE_BYTES)
    sealed = aes(_key(passphrase, salt, N, R, P)).encrypt(nonce, plain, FORMAT.encode())
    return orjson.dumps({"format": FORMAT, "version": VERSION,
                         "kdf": {"name": "scrypt", "n": N, "r": R, "p": P, "salt": b64(salt)},
                         "cipher": "AES-256-GCM", "nonce": b64(nonce), "data": b64(sealed)})


def is_sealed(data: bytes) -> bool:
    return data.lstrip()[:60].replace(b" ", b"").startswith(b'{"format":"' + FORMAT.encode())


def open_sealed(data: bytes, passphrase: str | None) -> bytes:
    """The plain device file inside a sealed one (BadFile: why it cannot be opened)."""
    import orjson

    if not passphrase:
        raise BadFile("encrypted, and this device has no passphrase (ctxlamp sync --passphrase)")
    try:
        doc = orjson.loads(data)
        kdf = doc["kdf"]
        n, r, p = kdf["n"], kdf["r"], kdf["p"]
        salt, nonce, sealed = unb64(kdf["salt"]), unb64(doc["nonce"]), unb64(doc["data"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise BadFile("an encrypted file that is not whole (torn, or half-way through a sync)") from None
    if doc.get("version") != VERSION or kdf.get("name") != "scrypt" or doc.get("cipher") != "AES-256-GCM":
        raise BadFile("encrypted in a way this ctxlamp does not read")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (n, r, p)) or \
            not (N_RANGE[0] <= n <= N_RANGE[1] and n & (n - 1) == 0 and r == R and 1 <= p <= 4) or \
            len(salt) != SALT_BYTES or len(nonce) != NONCE_BYTES:
        raise BadFile("its key derivation's parameters are out of range")
    aes, _scrypt = primitives()
    from cryptography.exceptions import InvalidTag

    try:
        return aes(_key(passphrase, salt, n, r, p)).decrypt(nonce, sealed, FORMAT.encode())
    except InvalidTag:
        raise BadFile("cannot be decrypted with this device's passphrase (or was changed)") from None


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: object) -> bytes:
    if not isinstance(text, str):
        raise TypeError("not text")
    return base64.b64decode(text, validate=True)


def load_passphrase(config_dir: Path) -> str | None:
    """This device's passphrase, or None (no file: sync files are written plain)."""
    try:
        text = (config_dir / PASS_FILE).read_text(encoding="utf-8").rstrip("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def save_passphrase(config_dir: Path, passphrase: str | None) -> None:
    """Keep the passphrase (mode 0600), or drop it (None): the next write is then plain."""
    from service.client.privdir import make_private_dirs, write_private

    path = config_dir / PASS_FILE
    if not passphrase:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    make_private_dirs(os.fspath(config_dir))
    write_private(path, passphrase.encode("utf-8") + b"\n")
