"""The service's proof (service/client/proof.py): the standard HMAC, bound to the nonce, the port and the key."""
from __future__ import annotations

import hashlib
import hmac

from hypothesis import given, strategies as st

from service.client import proof

hexkey = st.binary(min_size=32, max_size=32).map(bytes.hex)
nonce = st.binary(min_size=16, max_size=64).map(bytes.hex)
port = st.integers(1, 65535)


@given(st.binary(max_size=200), st.binary(max_size=300))
def test_the_builtin_hmac_is_the_standard_one(key, message):
    assert proof._hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).digest()


@given(hexkey, nonce, port)
def test_the_answer_holds_only_for_its_key_nonce_and_port(key, n, p):
    said = proof.answer(key, n, p)
    assert proof.holds(key, n, p, said)
    other_key = ("0" if key[0] != "0" else "1") + key[1:]
    assert not proof.holds(other_key, n, p, said)
    assert not proof.holds(key, n, p % 65535 + 1, said)  # relayed from another port
    assert not proof.holds(key, proof.new_nonce(), p, said)  # replayed for another nonce
    assert not proof.holds(None, n, p, said) and not proof.holds(key, n, p, None)
    assert not proof.holds(key, n, p, said.upper() + "é") and not proof.holds("zz" * 32, n, p, said)


def test_nonces_are_fresh_and_what_the_service_accepts():
    made = {proof.new_nonce() for _ in range(100)}
    assert len(made) == 100 and all(proof.valid_nonce(n) for n in made)
    for bad in ("", "ab" * 15, "AB" * 16, "g" * 32, "a" * 129, "a b" * 12):
        assert not proof.valid_nonce(bad)
