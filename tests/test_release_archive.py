"""Safe archive reading (each attack in an archive the test builds), SHA256SUMS parsing, and
the archive and manifest importers."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import ingest_bundle, write_bundle

from provgraph.evidence import sha256sums as sums
from provgraph.evidence.archive import ArchiveError, Limits, extract, safe_member_path, walk

RELEASE = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*.md"]\n'


def make_zip(path: Path, members: dict[str, bytes], modes: dict[str, int] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if modes and name in modes:
                info.external_attr = modes[name] << 16
            zf.writestr(info, data)
    return path


def make_tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]], gz: bool = False) -> Path:
    with tarfile.open(path, "w:gz" if gz else "w") as tf:
        for item in members:
            if isinstance(item, tarfile.TarInfo):
                tf.addfile(item)
            else:
                info = tarfile.TarInfo(item[0])
                info.size = len(item[1])
                tf.addfile(info, io.BytesIO(item[1]))
    return path


def link(name: str, target: str, hard: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info


def members(path: Path, limits: Limits | None = None) -> dict[str, str]:
    found = {}
    for entry in walk(path, limits):
        if entry.kind == "file":
            found[entry.path] = entry.read_hash()[0]
        elif entry.kind != "dir":
            found[entry.path] = f"{entry.kind}->{entry.link}"
    return found


@pytest.mark.parametrize("suffix", ["zip", "tar", "tar.gz"])
def test_members_and_hashes_of_each_format(tmp_path: Path, suffix: str) -> None:
    data = {"README.md": b"Q = 182.29\n", "data/x.csv": b"a,b\n1,2\n"}
    path = tmp_path / f"a.{suffix}"
    if suffix == "zip":
        make_zip(path, data)
    else:
        make_tar(path, list(data.items()), gz=suffix == "tar.gz")
    assert members(path) == {k: hashlib.sha256(v).hexdigest() for k, v in data.items()}


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../evil.txt", "path traversal: '..' would leave the archive root"),
        ("a/../../evil.txt", "path traversal"),
        ("/etc/passwd", "absolute path"),
        ("C:/windows/x", "absolute path"),
        ("a\\..\\evil.txt", "backslash in the member path"),
    ],
)
def test_unsafe_names_are_rejected_in_zip_and_tar(tmp_path: Path, name: str, reason: str) -> None:
    z = make_zip(tmp_path / "a.zip", {"ok.txt": b"x", name: b"evil"})
    with pytest.raises(ArchiveError, match=reason) as err:
        members(z)
    assert str(err.value).startswith(f"{z}: member {name!r}:")
    t = make_tar(tmp_path / "a.tar", [("ok.txt", b"x"), (name, b"evil")])
    with pytest.raises(ArchiveError, match=reason):
        members(t)


def test_links_inside_the_tree_are_kept_and_links_leaving_it_rejected(tmp_path: Path) -> None:
    inside = make_tar(
        tmp_path / "in.tar",
        [("a/x.txt", b"x"), link("a/y.txt", "x.txt"), link("b.txt", "a/x.txt", hard=True)],
    )
    assert members(inside)["a/y.txt"] == "symlink->a/x.txt"
    assert members(inside)["b.txt"] == "hardlink->a/x.txt"
    for bad in (link("a/y", "../../etc/passwd"), link("y", "/etc/passwd"), link("h", "../x", hard=True)):
        path = make_tar(tmp_path / f"{bad.name.replace('/', '_')}.tar", [("a/x.txt", b"x"), bad])
        with pytest.raises(ArchiveError, match="leaves the archive tree"):
            members(path)
    z = make_zip(tmp_path / "l.zip", {"l": b"../../etc/passwd"}, {"l": stat.S_IFLNK | 0o777})
    with pytest.raises(ArchiveError, match=r"link to '../../etc/passwd' leaves the archive tree"):
        members(z)


def test_special_files_and_duplicates_are_rejected(tmp_path: Path) -> None:
    fifo = tarfile.TarInfo("pipe")
    fifo.type = tarfile.FIFOTYPE
    with pytest.raises(ArchiveError, match="special file"):
        members(make_tar(tmp_path / "f.tar", [fifo]))
    with pytest.raises(ArchiveError, match="appears twice"):
        members(make_tar(tmp_path / "d.tar", [("a.txt", b"1"), ("./a.txt", b"2")]))


def test_decompression_bombs_are_stopped(tmp_path: Path) -> None:
    zeros = b"\0" * (4 << 20)
    z = make_zip(tmp_path / "bomb.zip", {"zeros.bin": zeros})
    with pytest.raises(ArchiveError, match=r"compression ratio .* exceeds the limit 200:1"):
        members(z)
    with pytest.raises(ArchiveError, match="more than the 1000-byte member limit"):
        members(z, Limits(max_member_bytes=1000, max_ratio=1e9))
    with pytest.raises(ArchiveError, match="expands to more than 1000 bytes"):
        members(
            make_tar(tmp_path / "t.tar", [("a", b"x" * 600), ("b", b"y" * 600)]), Limits(max_total_bytes=1000)
        )
    gz = make_tar(tmp_path / "bomb.tar.gz", [("zeros.bin", zeros)], gz=True)
    with pytest.raises(ArchiveError, match="expands more than 200 times its compressed size"):
        members(gz)
    many = make_zip(tmp_path / "many.zip", {f"f{i}": b"" for i in range(5)})
    with pytest.raises(ArchiveError, match="more than the limit 3"):
        members(many, Limits(max_members=3))


def test_a_header_that_lies_about_its_size_is_caught(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "lie.zip", {"a.txt": b"x" * 5000})
    raw = bytearray(path.read_bytes())
    # shrink the declared uncompressed size in the central directory (offset 24 of the entry)
    cd = raw.rindex(b"PK\x01\x02")
    raw[cd + 24 : cd + 28] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(ArchiveError, match=r"member 'a.txt': corrupt member data: Bad CRC-32"):
        members(path)


def test_not_an_archive_and_corrupt_archive(tmp_path: Path) -> None:
    (tmp_path / "x.zip").write_bytes(b"hello")
    with pytest.raises(ArchiveError, match=r"not a zip, tar or tar.gz archive"):
        members(tmp_path / "x.zip")
    good = make_zip(tmp_path / "c.zip", {"a.txt": b"x" * 100})
    good.write_bytes(good.read_bytes()[:-30])
    with pytest.raises(ArchiveError, match=r"corrupt archive|cannot read"):
        members(good)


def test_extract_writes_only_inside_the_destination(tmp_path: Path) -> None:
    path = make_tar(
        tmp_path / "a.tar", [("a/x.txt", b"x"), link("a/y.txt", "x.txt"), link("b.txt", "a/x.txt", hard=True)]
    )
    dest = tmp_path / "out"
    extract(path, dest)
    assert (dest / "a" / "y.txt").is_symlink() and (dest / "a" / "y.txt").read_bytes() == b"x"
    assert (dest / "b.txt").read_bytes() == b"x" and not (dest / "b.txt").is_symlink()
    with pytest.raises(ArchiveError, match="is not empty"):
        extract(path, dest)


def test_safe_member_path_normalises() -> None:
    assert safe_member_path("./a//b/./c.txt") == "a/b/c.txt"


def test_manifest_styles_and_escapes() -> None:
    digest = "a" * 64
    lines = [
        f"{digest}  plain.txt",
        f"{digest} *binary.bin",
        f"SHA256 (bsd style.txt) = {digest}",
        f"\\{digest}  back\\\\slash\\nname",
        f"MD5 (x) = {'b' * 32}",
        "garbage",
    ]
    parsed = list(sums.parse(lines))
    assert [(e.path, e.style) for _, e, _ in parsed if e] == [
        ("plain.txt", "gnu"),
        ("binary.bin", "gnu"),
        ("bsd style.txt", "bsd"),
        ("back\\slash\nname", "gnu"),
    ]
    assert [p for _, _, p in parsed if p] == [
        "not a SHA-256 line (MD5)",
        "expected 'HEX  path' (GNU) or 'SHA256 (path) = HEX' (BSD --tag)",
    ]
    text = sums.format_gnu([("b.txt", digest), ("a\\b", digest)])
    assert [e.path for _, e, _ in sums.parse(text.splitlines()) if e] == ["a\\b", "b.txt"]


def test_archive_importer_reads_members_manifest_and_claims(tmp_path: Path) -> None:
    readme = b"Cochran Q = 154.73 in the old bundle\n"
    data = b"x\n"
    manifest = sums.format_gnu([("README.md", hashlib.sha256(readme).hexdigest()), ("extra.csv", "0" * 64)])
    root = write_bundle(tmp_path / "b", {}, RELEASE)
    make_zip(root / "old.zip", {"README.md": readme, "data.csv": data, "SHA256SUMS": manifest.encode()})
    store, results, problems = ingest_bundle(root)
    assert not problems and {r.rel: r.outcome for r in results}["old.zip"] == "imported"
    rows = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> SELECT ?p ?sha WHERE { ?m a pg:ArchiveMember ; "
        "pg:path ?p ; pg:sha256 ?sha } ORDER BY ?p"
    )
    assert [r["p"].value for r in rows] == ["old.zip!/README.md", "old.zip!/SHA256SUMS", "old.zip!/data.csv"]
    claims = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> SELECT ?t ?path ?line WHERE { ?c a pg:Claim ; "
        "pg:text ?t ; "
        "pg:sourceFile/pg:path ?path ; pg:sourceLine ?line }"
    )
    assert [(r["t"].value, r["path"].value, r["line"].value) for r in claims] == [
        ("154.73", "old.zip!/README.md", "1")
    ]
    from provgraph.lineage.gate import run_gate
    from provgraph.rules import load_rules

    report = run_gate(store, load_rules(), explicit=True, record=False)
    (mismatch,) = [r for r in report.results if r.rule.id == "release-manifest-mismatch"]
    assert sorted(v.message for v in mismatch.violations) == [
        "data.csv is in archive old.zip but not in its SHA256SUMS",
        "extra.csv is listed in the SHA256SUMS of old.zip but missing from the archive",
    ]


def test_unsafe_archive_fails_its_import_with_a_clear_error(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, RELEASE)
    make_zip(root / "evil.zip", {"../../escape.txt": b"x"})
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "evil.zip"]
    assert result.outcome == "failed"
    assert (
        result.error
        == "evil.zip: member '../../escape.txt': path traversal: '..' would leave the archive root"
    )


def test_standalone_manifest_is_closed_over_its_folder(tmp_path: Path) -> None:
    a, b = b"a\n", b"b\n"
    listing = f"SHA256 (a.txt) = {hashlib.sha256(a).hexdigest()}\n{'0' * 64}  gone.txt\nnot a line\n"
    root = write_bundle(tmp_path / "b", {"rel/a.txt": a, "rel/b.txt": b, "rel/SHA256SUMS": listing}, RELEASE)
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "rel/SHA256SUMS"]
    assert [str(p) for p in result.problems] == [
        "rel/SHA256SUMS:3: expected 'HEX  path' (GNU) or 'SHA256 (path) = HEX' (BSD --tag)"
    ]
    from provgraph.lineage.gate import run_gate
    from provgraph.rules import load_rules

    report = run_gate(store, load_rules(), record=False)
    (mismatch,) = [r for r in report.results if r.rule.id == "release-manifest-mismatch"]
    assert sorted(v.message for v in mismatch.violations) == [
        "rel/b.txt sits beside rel/SHA256SUMS but is not listed in it "
        "(the manifest is closed over its folder)",
        "rel/gone.txt is listed in rel/SHA256SUMS but missing",
    ]
