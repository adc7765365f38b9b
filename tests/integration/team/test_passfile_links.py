"""`team member add --passfile P` never writes through a link: P may sit in a folder other users write to."""
from __future__ import annotations

import os
import stat

import pytest

from service.team import passfile
from tests.support.pg_server import module_server
from tests.support.procs import ctl
from tests.support.team_history import member_env

VICTIM_TEXT = "another user's file\n"
KEY = ("127.0.0.1", "5432", "team", "ctxlamp_m_ada")


@pytest.fixture
def shared(tmp_path):
    """A shared folder, and a file of somebody else's that a planted link points at."""
    victim = tmp_path / "victim" / "notes.txt"
    victim.parent.mkdir()
    victim.write_text(VICTIM_TEXT)
    victim.chmod(0o644)
    (tmp_path / "shared").mkdir()
    return tmp_path


def untouched(root) -> None:
    victim = root / "victim" / "notes.txt"
    assert victim.read_text() == VICTIM_TEXT and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert not (root / "elsewhere").exists()


def plant(root, kind: str):
    link = root / "shared" / "pgpass"
    target = root / "victim" / "notes.txt" if kind == "to a file" else root / "elsewhere" / "deep" / "pgpass"
    link.symlink_to(target)
    return link


@pytest.mark.parametrize("kind", ["to a file", "dangling"])
def test_a_link_at_the_password_files_name_is_refused(shared, kind):
    link = plant(shared, kind)
    with pytest.raises(passfile.Unsafe, match="is a link"):
        passfile.put(link, *KEY, "pw")
    untouched(shared)
    assert link.is_symlink()


def test_a_link_planted_between_the_check_and_the_read_is_not_followed(shared, monkeypatch):
    """Another user swaps a link in after the is_symlink check: the old file is read without following it."""
    path = shared / "shared" / "pgpass"
    real_open = os.open

    def racing_open(name, flags, *args, **kw):
        if str(name) == str(path) and not path.is_symlink():
            path.symlink_to(shared / "victim" / "notes.txt")
        return real_open(name, flags, *args, **kw)

    monkeypatch.setattr(passfile.os, "open", racing_open)
    with pytest.raises(passfile.Unsafe):
        passfile.put(path, *KEY, "pw")
    untouched(shared)


def test_a_dangling_link_in_the_folders_makes_no_folder(shared):
    (shared / "shared" / "team").symlink_to(shared / "elsewhere" / "team")
    with pytest.raises(OSError):
        passfile.put(shared / "shared" / "team" / "sub" / "pgpass", *KEY, "pw")
    untouched(shared)


def test_the_file_itself_is_written_0600_and_its_other_lines_kept(shared):
    path = shared / "shared" / "pgpass"
    path.write_text("# mine\nh:1:d:u:old\n")
    passfile.put(path, *KEY, "pw")
    assert path.read_text() == "# mine\nh:1:d:u:old\n" + passfile.entry(*KEY, "pw") + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and not path.is_symlink()


pg = pytest.fixture(scope="module", name="pg")(module_server)


@pytest.mark.parametrize("kind", ["to a file", "dangling"])
def test_member_add_with_a_planted_passfile_link_writes_nothing(pg, shared, kind):
    from service.team import schema

    owner = pg.fresh_database(f"links_{kind.replace(' ', '_')}")
    schema.init(owner)
    link = plant(shared, kind)
    r = ctl(member_env(shared, 1), "team", "member", "add", "ada@laptop", "--url", owner, "--passfile", str(link))
    assert r.returncode == 1 and "is a link" in r.stderr and "Traceback" not in r.stderr
    untouched(shared)
