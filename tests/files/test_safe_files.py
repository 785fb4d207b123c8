"""dlio_mpi.files.safe_files: a new file never goes through a link at its name (temporary or final),
a stale entry is replaced, a failed write leaves the final name as it was and no temporary
file, and its error names the file."""
import errno
import os

import pytest

from dlio_mpi.files import safe_files


@pytest.fixture
def outside(tmp_path_factory):
    """A file outside the folder written to, with known content: a link's target."""
    target = tmp_path_factory.mktemp("elsewhere") / "precious.txt"
    target.write_text("keep me\n")
    return target


def test_a_link_at_the_temporary_name_is_removed_never_followed(tmp_path, outside):
    final = tmp_path / "summary.json"
    os.symlink(outside, f"{final}.part")
    safe_files.write_whole(str(final), "{}")
    assert outside.read_text() == "keep me\n"
    assert final.read_text() == "{}" and not final.is_symlink()
    assert not os.path.lexists(f"{final}.part")


def test_a_link_at_the_final_name_is_replaced_never_followed(tmp_path, outside):
    final = tmp_path / "report.md"
    os.symlink(outside, final)
    safe_files.write_whole(str(final), b"# report\n", fsync=True)
    assert outside.read_text() == "keep me\n"
    assert final.read_bytes() == b"# report\n" and not final.is_symlink()


def test_a_dangling_link_is_removed_not_created_through(tmp_path):
    target = tmp_path / "elsewhere" / "made.txt"
    target.parent.mkdir()
    tmp = tmp_path / "data.bin.part.0"
    os.symlink(target, tmp)
    with safe_files.create(str(tmp)) as f:
        f.write(b"x")
    assert not target.exists()
    assert tmp.read_bytes() == b"x" and not tmp.is_symlink()


def test_a_stale_temporary_file_is_replaced(tmp_path):
    final = tmp_path / "per_rank.csv"
    (tmp_path / "per_rank.csv.part").write_text("left by a run that crashed, much longer\n")
    safe_files.write_whole(str(final), "a,b\n")
    assert final.read_text() == "a,b\n"


def test_a_failed_write_leaves_the_final_name_as_it_was_and_no_temporary(tmp_path):
    final = tmp_path / "status.json"
    final.write_text("old")
    with pytest.raises(RuntimeError):
        with safe_files.replaced(str(final)) as f:
            f.write("half")
            raise RuntimeError("stopped midway")
    assert final.read_text() == "old"
    assert os.listdir(tmp_path) == ["status.json"]


def test_an_error_without_a_file_name_gets_the_final_name(tmp_path):
    final = tmp_path / "x.png"
    with pytest.raises(OSError) as e:
        with safe_files.replaced(str(final), "wb"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(final)
    assert not os.listdir(tmp_path)


def test_a_directory_at_the_temporary_name_is_an_error_naming_it(tmp_path):
    final = tmp_path / "summary.json"
    (tmp_path / "summary.json.part").mkdir()
    with pytest.raises(OSError) as e:
        safe_files.write_whole(str(final), "{}")
    assert e.value.filename == f"{final}.part"
    assert not final.exists()


def test_the_lock_is_never_taken_over_by_create(tmp_path):
    lock = tmp_path / ".lock"
    lock.write_text("other")
    with pytest.raises(FileExistsError):
        safe_files.create_fd(str(lock), replace_stale=False)
    assert lock.read_text() == "other"


def test_the_temporary_name_must_be_in_the_final_folder(tmp_path):
    with pytest.raises(ValueError):
        with safe_files.replaced(str(tmp_path / "a"), temp=str(tmp_path / "sub" / "a.part")):
            pass


def test_a_new_hdf5_file_never_goes_through_a_link(tmp_path, outside):
    path = tmp_path / "file.h5.part"
    os.symlink(outside, path)
    with safe_files.create_hdf5(str(path)) as f:
        f.create_dataset("x", data=[1, 2, 3])
    assert outside.read_text() == "keep me\n"
    assert not path.is_symlink() and path.stat().st_size > 0


def test_a_signal_inside_fdopen_is_raised_not_a_second_close(tmp_path, monkeypatch):
    """SIGTERM's exception raised inside os.fdopen after its file object took the
    descriptor (and closed it as it was dropped): create raises that exception. Before, its
    own close of the descriptor failed with EBADF, and generate said "Bad file descriptor"
    instead of the signal."""
    real = os.fdopen

    class Stopped(BaseException):
        pass

    def fdopen(fd, mode):
        real(fd, mode).close()
        raise Stopped()

    monkeypatch.setattr(os, "fdopen", fdopen)
    with pytest.raises(Stopped):
        safe_files.create(str(tmp_path / "f"))
