"""The archive attack suite: real hostile zip, tar and tar.gz files, written with zipfile and
tarfile, each through `provgraph release verify` and `provgraph ingest` of a bundle holding it.

Every attack is refused with one line naming the archive and the member, exit 2 (never 3);
no file appears outside the extraction folder, the sentinel file outside is never copied or
hashed (its digest appears in no output), and the temporary extraction stays under the limit.
"""

from __future__ import annotations

import hashlib
import io
import re
import stat
import tarfile
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from test_release_archive import make_tar as _tar

from provgraph.evidence.archive import ArchiveError, Limits, extract

RELEASE = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*.md"]\n'
SENTINEL = b"SENTINEL-7f3a-outside-the-archive\n"
ZEROS = b"\0" * (8 << 20)
BOMB = r"expands more|expands to more than"  # the ratio, or the total when lower
AMPLIFIED = r"with its hard-link copies|expands to more than"  # ratio, or total first


def _zip(path: Path, items: list[tuple[str, bytes]], modes: dict[str, int] | None = None) -> Path:
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")  # "Duplicate name" is the point of one attack
        for name, data in items:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if modes and name in modes:
                info.external_attr = modes[name] << 16
            zf.writestr(info, data)
    return path


def _special(name: str, kind: bytes, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def _chain(up: int, leaf: str) -> list[tarfile.TarInfo | tuple[str, bytes]]:
    """``a -> .``, ``a/n0 -> ..``, ``a/n0/n1 -> ..`` ...: each looks in-tree, each climbs one more.

    Three climbs from verify's extraction folder (``tmp/provgraph-verify-*/x``) reach the
    arena, so ``leak`` is the sentinel; the SHA256SUMS lists the sentinel's digest, which
    made `release verify` a hash oracle (it printed OK) before links were resolved.
    """
    names = ["a"]
    links = [_special("a", tarfile.SYMTYPE, ".")]
    for i in range(up):
        names.append(f"n{i}")
        links.append(_special("/".join(names), tarfile.SYMTYPE, ".."))
    kind = tarfile.LNKTYPE if leaf == "hard" else tarfile.SYMTYPE
    leak = _special("leak", kind, "/".join(names) + "/outside/sentinel.txt")
    sums = f"{hashlib.sha256(SENTINEL).hexdigest()}  leak\n".encode()
    return [("SHA256SUMS", sums), *links, leak]


def _nul_zip(path: Path) -> Path:
    _zip(path, [("SHA256SUMS", b""), ("a.txtX.sh", b"x")])
    path.write_bytes(path.read_bytes().replace(b"a.txtX.sh", b"a.txt\0.sh"))
    return path


def _corrupt_zip(path: Path) -> Path:
    _zip(path, [("data.txt", bytes(range(256)) * 64)])
    raw = bytearray(path.read_bytes())
    start = 30 + len("data.txt")  # the local header, then the deflate stream
    raw[start : start + 40] = b"\xff" * 40
    path.write_bytes(bytes(raw))
    return path


def _nested(path: Path) -> Path:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros.bin", ZEROS)
    return _tar(path, [(f"copy{i}.zip", inner.getvalue()) for i in range(800)], gz=True)


def _amplify(path: Path, gz: bool) -> Path:
    links = [_special(f"h{i}", tarfile.LNKTYPE, "big.bin") for i in range(2000)]
    return _tar(path, [("big.bin", b"\0" * (256 << 10)), *links], gz=gz)


def _abs(tmp: Path) -> str:
    return (tmp / "outside" / "planted.txt").as_posix()


#: name -> (archive file name, builder(path, tmp_path), what the refusal says)
ATTACKS: dict[str, tuple[str, Callable[[Path, Path], Path], str]] = {
    "zip-slip zip": (
        "slip.zip",
        lambda p, t: _zip(p, [("ok.md", b"x"), ("../../../../planted.txt", b"x")]),
        "path traversal",
    ),
    "zip-slip tar": ("slip.tar", lambda p, t: _tar(p, [("a/../../../planted.txt", b"x")]), "path traversal"),
    "absolute zip": ("abs.zip", lambda p, t: _zip(p, [(_abs(t), b"x")]), "absolute path"),
    "absolute tar": ("abs.tar", lambda p, t: _tar(p, [(_abs(t), b"x")]), "absolute path"),
    "symlink chain, hard leaf": ("chain.tar", lambda p, t: _tar(p, _chain(3, "hard")), "not a directory"),
    "symlink chain, soft leaf": ("chain2.tar", lambda p, t: _tar(p, _chain(3, "soft")), "not a directory"),
    "link through a link": (
        "through.tar",
        lambda p, t: _tar(p, [_special("up", tarfile.SYMTYPE, "."), _special("x", tarfile.LNKTYPE, "up/x")]),
        "goes through the symbolic link 'up'",
    ),
    "link then a link on its path": (
        "later.tar",
        lambda p, t: _tar(p, [_special("x", tarfile.SYMTYPE, "d/f"), _special("d", tarfile.SYMTYPE, "..")]),
        "links may not chain",
    ),
    "zip symlink chain": (
        "chain.zip",
        lambda p, t: _zip(
            p, [("a", b"."), ("a/b", b"..")], {"a": stat.S_IFLNK | 0o777, "a/b": stat.S_IFLNK | 0o777}
        ),
        "not a directory",
    ),
    "hardlink outside": (
        "hard.tar",
        lambda p, t: _tar(p, [_special("h", tarfile.LNKTYPE, "../../../outside/sentinel.txt")]),
        "leaves the archive tree",
    ),
    "hardlink absolute": (
        "hardabs.tar",
        lambda p, t: _tar(p, [_special("h", tarfile.LNKTYPE, str(t / "outside" / "sentinel.txt"))]),
        "leaves the archive tree",
    ),
    "hardlink amplification tar.gz": ("amp.tar.gz", lambda p, t: _amplify(p, True), AMPLIFIED),
    "hardlink amplification tar": ("amp.tar", lambda p, t: _amplify(p, False), AMPLIFIED),
    "character device": (
        "dev.tar",
        lambda p, t: _tar(p, [_special("null", tarfile.CHRTYPE)]),
        "special file",
    ),
    "block device": ("blk.tar", lambda p, t: _tar(p, [_special("sda", tarfile.BLKTYPE)]), "special file"),
    "fifo tar": ("fifo.tar", lambda p, t: _tar(p, [_special("pipe", tarfile.FIFOTYPE)]), "special file"),
    "fifo zip": (
        "fifo.zip",
        lambda p, t: _zip(p, [("pipe", b"")], {"pipe": stat.S_IFIFO | 0o644}),
        "special file",
    ),
    "duplicate tar": ("dup.tar", lambda p, t: _tar(p, [("a.md", b"1"), ("./a.md", b"2")]), "appears twice"),
    "duplicate zip": ("dup.zip", lambda p, t: _zip(p, [("a.md", b"1"), ("a.md", b"2")]), "appears twice"),
    "file then member under it": (
        "under.tar",
        lambda p, t: _tar(p, [("a", b"1"), ("a/b", b"2")]),
        "not a directory",
    ),
    "ratio bomb zip": ("bomb.zip", lambda p, t: _zip(p, [("zeros.bin", ZEROS)]), "compression ratio"),
    "ratio bomb tar.gz": (
        "bomb.tar.gz",
        lambda p, t: _tar(p, [("zeros.bin", ZEROS)], gz=True),
        "expands more",
    ),
    "nested bomb": ("nested.tar.gz", lambda p, t: _nested(p), BOMB),
    "corrupt deflate": ("corrupt.zip", lambda p, t: _corrupt_zip(p), "corrupt compressed data"),
    "NUL in a zip name": ("nul.zip", lambda p, t: _nul_zip(p), "NUL byte in the member name"),
}


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (links not followed) with the bytes of the regular files."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("bundle/.provgraph"):
            continue  # the store ingest writes
        found[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return found


@pytest.fixture
def arena(tmp_path: Path, monkeypatch) -> Path:
    """``outside/sentinel.txt``, a bundle, a work folder, and a private temporary folder that
    `release verify` extracts into (so an escape from it lands where the test looks)."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "sentinel.txt").write_bytes(SENTINEL)
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "provgraph.toml").write_text(RELEASE)
    (tmp_path / "work").mkdir()
    deep = tmp_path / "tmp"
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    return tmp_path


def _assert_refused(code: int, err: str, archive: str, reason: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"provgraph: error: {archive}: ") and re.search(reason, lines[0]), lines[0]


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_release_verify_refuses(cli, arena: Path, attack: str) -> None:
    name, builder, reason = ATTACKS[attack]
    archive = builder(arena / "work" / name, arena)
    before = _tree(arena)
    r = cli("release", "verify", str(archive), cwd=arena / "work")
    _assert_refused(r.code, r.err, str(archive), reason)
    digest = hashlib.sha256(SENTINEL).hexdigest()
    assert digest[:12] not in r.out + r.err
    assert _tree(arena) == before  # nothing planted, the temporary folder removed
    assert list((arena / "tmp").iterdir()) == []


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_ingest_refuses(cli, arena: Path, attack: str) -> None:
    name, builder, reason = ATTACKS[attack]
    builder(arena / "bundle" / name, arena)
    before = _tree(arena)
    r = cli("-C", str(arena / "bundle"), "ingest")
    _assert_refused(r.code, r.err, name, reason)
    assert f"{name}" in r.out and "failed" in r.out
    assert _tree(arena) == before
    stored = cli(
        "-C",
        str(arena / "bundle"),
        "query",
        "SELECT ?s WHERE { ?m <https://w3id.org/provgraph/ns#sha256> ?s }",
    )
    assert hashlib.sha256(SENTINEL).hexdigest() not in stored.out


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_extraction_stays_inside_and_under_the_limit(arena: Path, attack: str) -> None:
    name, builder, reason = ATTACKS[attack]
    archive = builder(arena / "work" / name, arena)
    limits = Limits(max_total_bytes=4 << 20)
    dest = arena / "tmp" / "v" / "x"  # as deep as verify's, so the chains reach the arena
    before = _tree(arena)
    with pytest.raises(ArchiveError, match=reason):
        extract(archive, dest, limits)
    after = _tree(arena)
    written = {k: v for k, v in after.items() if k not in before}
    assert all(k.startswith("tmp/v") for k in written), sorted(written)
    assert SENTINEL not in [v for k, v in written.items()]
    assert sum(len(v or b"") for v in written.values()) <= limits.max_total_bytes


def test_hardlink_amplification_is_bounded_by_the_total_limit(tmp_path: Path) -> None:
    """With the ratio out of the way, the copies still count against max_total_bytes."""
    archive = _amplify(tmp_path / "amp.tar", gz=False)
    dest = tmp_path / "x"
    with pytest.raises(ArchiveError, match=r"member 'h\d+': the archive expands to more than 2097152 bytes"):
        extract(archive, dest, Limits(max_total_bytes=2 << 20, max_ratio=1e9))
    assert sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) <= 2 << 20


def test_in_tree_links_still_extract(tmp_path: Path) -> None:
    """The rule refuses links through links, not ordinary links (relative, up and across)."""
    archive = _tar(
        tmp_path / "ok.tar",
        [
            ("lib/x.txt", b"x"),
            _special("bin/x", tarfile.SYMTYPE, "../lib/x.txt"),
            _special("lib/copy.txt", tarfile.LNKTYPE, "lib/x.txt"),
            _special("lib/copy2.txt", tarfile.LNKTYPE, "lib/copy.txt"),
            _special("top", tarfile.SYMTYPE, "."),
        ],
    )
    extract(archive, tmp_path / "x")
    assert (tmp_path / "x" / "bin" / "x").read_bytes() == b"x"
    assert (tmp_path / "x" / "lib" / "copy2.txt").read_bytes() == b"x"


def test_a_nested_bomb_inside_a_stored_member(cli, arena: Path) -> None:
    """A bomb one level down: verify's privacy scan walks into it and refuses it; ingest
    hashes the inner archive as bytes and never expands it (bounded by construction)."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros.bin", ZEROS)
    outer = arena / "work" / "outer.zip"
    listing = f"{hashlib.sha256(inner.getvalue()).hexdigest()}  inner.zip\n"
    with zipfile.ZipFile(outer, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("inner.zip", inner.getvalue())
        zf.writestr("SHA256SUMS", listing)
    r = cli("release", "verify", str(outer), cwd=arena / "work")
    _assert_refused(r.code, r.err, f"{outer.name}!/inner.zip", "compression ratio")
    assert list((arena / "tmp").iterdir()) == []
