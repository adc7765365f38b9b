"""The service proves it is this user's own before a client sends its token or reads its answer.

Any local user may listen on 127.0.0.1, for instance on the port that a killed service's stale
api.json still names. api.json (0600, in the user's private runtime folder) holds, beside the
bearer token, a proof key that only this user can read. On the connection it will use, a client
first asks `GET /api/v1/proof?nonce=N` (no token, no data) and goes on only when the answer is
HMAC-SHA256(key, "ctxlamp-api/1 N PORT"): a fresh nonce, so no earlier answer can be replayed, and
the port the client dialled, so no answer can be relayed from another port. The key is not the
token, so the unauthenticated proof route never computes anything under the token.

Builtins and `_sha256` only (about 0.3 ms to import; `hmac` brings OpenSSL's `_hashlib`, about 3 ms):
the status line imports this under `python -S` on its clock.
"""
PATH = "/api/v1/proof"
NONCE_HEX = 32          # a client's nonce: 16 random bytes as hex
KEY_HEX = 64            # the proof key in api.json: 32 random bytes as hex
_LABEL = b"ctxlamp-api/1"


def _sha256(data: bytes) -> bytes:
    try:
        import _sha256 as module  # type: ignore[import-not-found]  # CPython's builtin, untyped
    except ImportError:  # a build without the module: hashlib's (slower to import, same digest)
        import hashlib as module
    return module.sha256(data).digest()


def _hmac_sha256(key: bytes, message: bytes) -> bytes:
    """RFC 2104 HMAC with SHA-256 (the standard `hmac.digest(key, message, "sha256")`)."""
    if len(key) > 64:
        key = _sha256(key)
    key = key.ljust(64, b"\0")
    inner = _sha256(bytes(b ^ 0x36 for b in key) + message)
    return _sha256(bytes(b ^ 0x5C for b in key) + inner)


def new_nonce() -> str:
    import os

    return os.urandom(NONCE_HEX // 2).hex()


def valid_nonce(nonce: str) -> bool:
    """A nonce the service answers: hex text of 32 to 128 characters (a client's fresh random bytes)."""
    return 32 <= len(nonce) <= 128 and all(c in "0123456789abcdef" for c in nonce)


def new_key() -> str:
    import os

    return os.urandom(KEY_HEX // 2).hex()


def answer(key_hex: str, nonce: str, port: int) -> str:
    """The proof the service answers for `nonce` on `port` (hex)."""
    return _hmac_sha256(bytes.fromhex(key_hex), b"%s %s %d" % (_LABEL, nonce.encode("ascii"), port)).hex()


def holds(key_hex: object, nonce: str, port: int, proof: object) -> bool:
    """Whether `proof` is the answer only a holder of `key_hex` could give (False for anything malformed)."""
    if not isinstance(key_hex, str) or not isinstance(proof, str) or len(key_hex) != KEY_HEX:
        return False
    try:
        expected = answer(key_hex, nonce, port)
    except ValueError:
        return False
    from _operator import _compare_digest  # builtin: hmac.compare_digest is this function

    return _compare_digest(expected, proof) if proof.isascii() else False
