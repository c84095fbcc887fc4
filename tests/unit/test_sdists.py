"""``tests/sdists.py``'s unpacking of a real sdist: tarfile's ``"data"`` filter where
Python has it (3.11.4+), and where it does not (Debian 12's 3.11.2) regular files and
folders inside the target only."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from tests.sdists import extract_tar


def _tar(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.uid, info.gid, info.uname, info.gname = 4242, 4242, "nobody-here", "none"
            tf.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo("pkg/link")
            info.type = tarfile.SYMTYPE
            info.linkname = link
            tf.addfile(info)
    return path


@pytest.mark.parametrize("has_filter", [True, False])
def test_extract_tar_unpacks_inside_and_refuses_what_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, has_filter: bool
) -> None:
    if not has_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    good = _tar(tmp_path / "good.tar.gz", {"pkg/a.py": b"a\n", "pkg/sub/b.py": b"b\n"})
    with tarfile.open(good) as tf:
        extract_tar(tf, tmp_path / "out")
    got = tmp_path / "out" / "pkg" / "sub" / "b.py"
    assert got.read_bytes() == b"b\n"
    assert got.stat().st_uid == os.getuid()  # not the archive's owner
    for n, bad in enumerate(
        [
            _tar(tmp_path / "up.tar.gz", {"pkg/../../evil.py": b"x\n"}),
            _tar(tmp_path / "link.tar.gz", {"pkg/a.py": b"a\n"}, link="/etc/passwd"),
        ]
    ):
        with tarfile.open(bad) as tf, pytest.raises(tarfile.TarError):
            extract_tar(tf, tmp_path / f"bad{n}")
    assert not (tmp_path / "evil.py").exists()
    # an absolute name: the filter unpacks it below the target, the fallback refuses it
    outside = tmp_path / "outside" / "evil.py"
    absolute = _tar(tmp_path / "abs.tar.gz", {str(outside): b"x\n"})
    with tarfile.open(absolute) as tf:
        try:
            extract_tar(tf, tmp_path / "abs")
        except tarfile.TarError:
            assert not hasattr(tarfile, "data_filter")
    assert not outside.exists()
