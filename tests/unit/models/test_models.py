"""The schema: migrations, version handling, file safety, and the models matching the tables."""
from __future__ import annotations

import os
import stat
import threading
import types
from pathlib import Path

import peewee as pw
import pytest

import models
from models import migrations
from tests.support.corpus import ROOT


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def db(tmp_path):
    database = models.open_database(tmp_path / "data" / "ctxlamp.db")
    yield database
    database.close()


def test_migrate_from_empty_reaches_latest_and_creates_every_table(db):
    assert models.schema_version(db) == 0
    assert models.migrate(db) == models.SCHEMA_VERSION == len(migrations.MIGRATIONS)
    assert db.execute_sql("PRAGMA user_version").fetchone()[0] == models.SCHEMA_VERSION
    tables = set(db.get_tables())
    for model in models.ALL_MODELS:
        assert model._meta.table_name in tables
    assert models.has_fts(db)


def test_migrated_columns_and_unique_keys_match_the_models(db):
    """Drift check: what the migrations built is exactly what the models declare."""
    models.migrate(db)
    for model in models.ALL_MODELS:
        table = model._meta.table_name
        built = {c.name for c in db.get_columns(table)}
        declared = {f.column_name for f in model._meta.sorted_fields}
        assert built == declared, table
        built_unique = {tuple(i.columns) for i in db.get_indexes(table) if i.unique}
        for fields, unique in model._meta.indexes:
            if unique:
                cols = tuple(model._meta.fields[f].column_name for f in fields)
                assert cols in built_unique, (table, cols)


def test_rerun_is_idempotent_even_when_the_version_was_lost(db):
    models.migrate(db)
    db.execute_sql("INSERT INTO session (session_id, is_subagent) VALUES ('s1', 0)")
    assert models.migrate(db) == models.SCHEMA_VERSION
    db.execute_sql("PRAGMA user_version = 0")  # as if the bump were lost: DDL must tolerate a re-run
    assert models.migrate(db) == models.SCHEMA_VERSION
    assert db.execute_sql("SELECT count(*) FROM session").fetchone()[0] == 1


def test_a_newer_database_is_refused_with_a_clear_error(db):
    models.migrate(db)
    db.execute_sql("PRAGMA user_version = 99")
    with pytest.raises(models.SchemaTooNew) as info:
        models.migrate(db)
    text = str(info.value)
    assert "99" in text and str(models.SCHEMA_VERSION) in text and "upgrade" in text
    assert info.value.found == 99 and info.value.known == models.SCHEMA_VERSION
    assert models.schema_version(db) == 99  # untouched


def test_a_failing_migration_leaves_no_trace(db):
    def broken_up(database):
        database.execute_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("boom in step 2")

    broken = types.SimpleNamespace(up=broken_up)
    steps = migrations.load_migrations()
    steps += [(len(steps) + 1, broken)]
    with pytest.raises(RuntimeError, match="boom"):
        models.migrate(db, steps)
    assert models.schema_version(db) == len(steps) - 1  # the real steps committed, the broken one rolled back
    assert "half_done" not in db.get_tables()


def test_migration_list_matches_the_files():
    folder = ROOT / "models" / "migrations"
    files = sorted(p.stem for p in folder.glob("[0-9][0-9][0-9][0-9]_*.py"))
    assert list(migrations.MIGRATIONS) == files


def test_two_processes_migrating_at_once_both_succeed(tmp_path):
    path = tmp_path / "race.db"
    models.open_database(path).close()
    results, errors = [], []

    def run():
        try:
            d = models.open_database(path)
            results.append(models.migrate(d))
            d.close()
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == [models.SCHEMA_VERSION] * 4


def test_open_database_pragmas_on_every_connection(db):
    seen = {}

    def probe():
        seen["journal"] = db.execute_sql("PRAGMA journal_mode").fetchone()[0]
        seen["busy"] = db.execute_sql("PRAGMA busy_timeout").fetchone()[0]
        seen["fk"] = db.execute_sql("PRAGMA foreign_keys").fetchone()[0]
        seen["sync"] = db.execute_sql("PRAGMA synchronous").fetchone()[0]
        db.close()

    t = threading.Thread(target=probe)  # a fresh thread gets a fresh connection
    t.start()
    t.join()
    assert seen == {"journal": "wal", "busy": 5000, "fk": 1, "sync": 1}


def test_files_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        path = tmp_path / "new" / "deeper" / "ctxlamp.db"
        d = models.open_database(path)
        models.migrate(d)
        d.execute_sql("INSERT INTO lineage (id, created_at) VALUES ('l', 'now')")
        for name in ("ctxlamp.db", "ctxlamp.db-wal", "ctxlamp.db-shm"):
            assert (path.parent / name).exists(), name
            assert _mode(path.parent / name) == 0o600, name
        assert _mode(path.parent) == 0o700
        d.close()
        d2 = models.open_database(path)  # reopened: the sidecars come back, still private
        d2.execute_sql("INSERT INTO lineage (id, created_at) VALUES ('m', 'now')")
        assert _mode(Path(str(path) + "-wal")) == 0o600
        d2.close()
    finally:
        os.umask(old)


def test_an_existing_loose_file_is_tightened(tmp_path):
    path = tmp_path / "loose.db"
    path.write_bytes(b"")
    os.chmod(path, 0o644)
    models.open_database(path).close()
    assert _mode(path) == 0o600


def test_read_only_connection_cannot_write_and_never_creates_files(tmp_path):
    missing = tmp_path / "nothing.db"
    ro = models.open_readonly(missing)
    with pytest.raises(pw.OperationalError):
        ro.execute_sql("SELECT 1 FROM session")
    assert not missing.exists()

    path = tmp_path / "real.db"
    w = models.open_database(path)
    models.migrate(w)
    ro = models.open_readonly(path)
    assert ro.execute_sql("SELECT count(*) FROM session").fetchone()[0] == 0
    with pytest.raises(pw.OperationalError):
        ro.execute_sql("INSERT INTO lineage (id, created_at) VALUES ('x', 'y')")


def test_open_url(tmp_path):
    d = models.open_url(f"sqlite:///{tmp_path}/u.db")
    assert isinstance(d, pw.SqliteDatabase) and (tmp_path / "u.db").exists()
    pg = models.open_url("postgresql://ann:s%40cret@db.example:6543/ctx?sslmode=require")
    assert isinstance(pg, pw.PostgresqlDatabase)
    assert pg.database == "ctx"
    assert pg.connect_params == {"user": "ann", "password": "s@cret", "host": "db.example", "port": 6543,
                                 "sslmode": "require"}
    assert pg.is_closed()  # nothing was contacted
    with pytest.raises(ValueError):
        models.open_url("mysql://x/y")
    with pytest.raises(ValueError):
        models.open_url("postgresql://host/")


def test_bound_models_keep_two_databases_apart(tmp_path):
    a, b = models.open_database(tmp_path / "a.db"), models.open_database(tmp_path / "b.db")
    models.migrate(a)
    models.migrate(b)
    ma, mb = models.bind_models(a), models.bind_models(b)
    ma.Lineage.create(id="only-in-a", created_at="t")
    assert [r.id for r in ma.Lineage.select()] == ["only-in-a"]
    assert mb.Lineage.select().count() == 0


def test_json_fields_round_trip_unicode(db):
    models.migrate(db)
    m = models.bind_models(db)
    m.TurnRecord.create(session_id="s", segment=0, turn_index=1, paths_read=["/tmp/naïve ✓.py"],
                        paths_changed=[])
    raw = db.execute_sql("SELECT paths_read FROM turn_record").fetchone()[0]
    assert "naïve ✓" in raw  # stored readable, so LIKE finds it
    assert m.TurnRecord.get().paths_read == ["/tmp/naïve ✓.py"]


def test_fts_index_follows_inserts_updates_and_deletes(db):
    models.migrate(db)
    m = models.bind_models(db)

    def hits(word):
        return [r[0] for r in db.execute_sql(
            f"SELECT rowid FROM {models.TURN_FTS_TABLE} WHERE {models.TURN_FTS_TABLE} MATCH ?", (f'"{word}"',))]

    t = m.TurnRecord.create(session_id="s", segment=0, turn_index=1, prompt_preview="refactor the lamp",
                            paths_read=["/src/widget.py"], paths_changed=[])
    assert hits("lamp") == [t.id] and hits("widget") == [t.id]
    m.TurnRecord.update(prompt_preview="rename the tray", paths_read=["/src/other.py"]).execute()
    assert hits("lamp") == [] and hits("tray") == [t.id] and hits("widget") == [] and hits("other") == [t.id]
    m.TurnRecord.update(lineage_id="l").execute()  # not an indexed column: index untouched
    assert hits("tray") == [t.id]
    m.TurnRecord.delete().execute()
    assert hits("tray") == []
    assert db.execute_sql(f"SELECT count(*) FROM {models.TURN_FTS_TABLE}").fetchone()[0] == 0
