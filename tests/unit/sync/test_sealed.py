"""Device files sealed with a passphrase (service/sync/sealed.py): what a reader without it, with another,
or with a changed file gets; a file cannot make the reader derive without bound."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("cryptography")

from service.sync import folder as shared  # noqa: E402
from service.sync import sealed  # noqa: E402
from service.sync.fileformat import BadFile, decode, encode  # noqa: E402
from tests.support.sync_files import ID, good  # noqa: E402


@pytest.fixture(autouse=True)
def lightest_derivation(monkeypatch):
    """The least work a reader accepts (2^14), not the 2^15 a device writes with: the same scrypt, half
    the time on a loaded test machine."""
    monkeypatch.setattr(sealed, "N", sealed.N_RANGE[0])


def test_a_sealed_file_opens_with_the_passphrase_and_holds_nothing_readable():
    plain = encode(good())
    data = sealed.seal(plain, "correct horse battery")
    assert sealed.is_sealed(data) and b"claude-opus" not in data and b"laptop" not in data
    assert decode(sealed.open_sealed(data, "correct horse battery")).doc() == good().doc()


@pytest.mark.parametrize("passphrase,why", [(None, "no passphrase"), ("", "no passphrase"),
                                            ("wrong horse battery", "cannot be decrypted")])
def test_without_the_passphrase_it_is_refused_and_named(passphrase, why):
    data = sealed.seal(encode(good()), "correct horse battery")
    with pytest.raises(BadFile, match=why):
        sealed.open_sealed(data, passphrase)


def test_a_changed_or_torn_sealed_file_is_refused():
    data = sealed.seal(encode(good()), "correct horse battery")
    doc = json.loads(data)
    raw = bytearray(sealed.unb64(doc["data"]))
    raw[10] ^= 1
    doc["data"] = sealed.b64(bytes(raw))
    with pytest.raises(BadFile, match="cannot be decrypted"):
        sealed.open_sealed(json.dumps(doc).encode(), "correct horse battery")
    with pytest.raises(BadFile, match="torn"):
        sealed.open_sealed(data[: len(data) // 2], "correct horse battery")


@pytest.mark.parametrize("kdf", [{"n": 2 ** 24}, {"n": 2 ** 15 + 1}, {"r": 64}, {"p": 100}, {"n": True},
                                 {"name": "pbkdf2"}])
def test_key_derivation_parameters_out_of_range_are_refused_before_any_work(kdf):
    doc = json.loads(sealed.seal(encode(good()), "correct horse battery"))
    doc["kdf"].update(kdf)
    with pytest.raises(BadFile, match="out of range|does not read"):
        sealed.open_sealed(json.dumps(doc).encode(), "correct horse battery")


def test_the_folder_writes_sealed_and_reads_plain_and_sealed_alike(tmp_path):
    shared.write(tmp_path, good(), "correct horse battery")
    assert sealed.is_sealed((tmp_path / shared.file_name(ID)).read_bytes())
    assert [d.id for d in shared.read(tmp_path, "correct horse battery").devices] == [ID]
    without = shared.read(tmp_path)
    assert without.devices == [] and "no passphrase" in dict(without.skipped)[shared.file_name(ID)]


def test_the_passphrase_is_kept_private_and_can_be_dropped(tmp_path):
    sealed.save_passphrase(tmp_path, "correct horse battery")
    assert sealed.load_passphrase(tmp_path) == "correct horse battery"
    assert (tmp_path / sealed.PASS_FILE).stat().st_mode & 0o077 == 0
    sealed.save_passphrase(tmp_path, None)
    assert sealed.load_passphrase(tmp_path) is None
