"""Git repositories: commits and tags as release states, with the file blobs at each.

Each commit becomes a ``pg:Commit`` (id, commit time, parents) holding its tree as
``pg:GitEntry`` nodes (path, blob id, SHA-256 and size of the blob's bytes); an entry that is
unchanged between commits is one node. Tags point at the commit they name (annotated tags
are peeled). Author names and e-mail addresses are never read. Uses the ``git`` program.

The tree of the *release tag* is released text: its files that ``[release].texts`` matches
(by their path in the repository, as archive members are, or by their bundle path) are read for
claims and mentions like any text, keyed ``git/<repository>/<tag>/<path>`` and with the
``pg:path`` ``<repository>/<path>@<tag>``. The release tag is ``v<version>``, else
``<version>``, of ``[release].version``; with no version, or no such tag, no tag is read as
released (older tags are historic states: a value later superseded is legitimate there).

A folder is a repository when it holds ``.git`` (or is a bare repository). The bundle root is
never detected as one (it holds the contract and the working tree, planned file by file); name
it in the contract, ``[ingest].importers = { "." = "git" }`` (or once, ``provgraph ingest
--importer git .``), and its history is read besides its files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import posixpath
import shutil
import subprocess
from pathlib import Path

from provgraph.evidence.claimnodes import emit_text, text_format
from provgraph.evidence.claims import Registry
from provgraph.evidence.patterns import matcher
from provgraph.ingest.api import (
    CERTAIN,
    LIKELY,
    NO,
    PG,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    MissingExtraError,
    Source,
)

#: Texts at the release tag larger than this are hashed but not read for claims.
MAX_TEXT_BYTES = 32 << 20


def _git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    exe = shutil.which("git")
    if exe is None:
        raise MissingExtraError("reading git repositories needs the git program (e.g. apt-get install git)")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            [exe, "-c", "safe.directory=*", "-C", str(repo), *args],
            input=data,
            capture_output=True,
            env=env,
            check=False,
        )
    except OSError as err:
        raise InputError(repo, f"cannot run git: {err}") from err
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise InputError(repo, f"git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout


def is_repository(path: Path) -> int:
    if (path / ".git").exists():
        return CERTAIN
    if (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir():
        return LIKELY
    return NO


class GitImporter(Importer):
    name = "git"
    version = "3"  # 2: table cells and source columns on the claims of released texts; 3: TSV
    description = "git repositories: commits and tags as release states with the file blobs at each"
    handles = "directory"
    uses_sections = ("release",)

    def detect(self, path: Path, bundle: Bundle) -> int:
        return is_repository(path)

    def state_key(self, source: Source) -> str | None:
        refs = _git(source.path, "for-each-ref", "--format=%(objectname) %(refname)")
        head = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(source.path), "rev-parse", "-q", "--verify", "HEAD"],
            capture_output=True,
            check=False,
        ).stdout
        return hashlib.sha256(refs + b"\n" + head).hexdigest()

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        add, repo, path = ctx.add, ctx.source_iri, source.path
        add(repo, RDF_TYPE, PG.GitRepository)
        log = _git(path, "log", "--all", "--format=%H%x00%P%x00%cI", "--")
        commits: list[tuple[str, list[str], str]] = []
        for line in log.decode().splitlines():
            sha, parents, when = line.split("\x00")
            commits.append((sha, parents.split(), when))
        entries: dict[tuple[str, str], str] = {}  # (path, blob) -> node, filled per commit
        trees: dict[str, list[tuple[str, str]]] = {}
        for sha, _, _ in commits:
            listing = _git(path, "ls-tree", "-r", "-z", "--full-tree", sha)
            items = []
            for record in listing.split(b"\x00"):
                if not record:
                    continue
                meta, name = record.split(b"\t", 1)
                _mode, kind, blob = meta.decode().split()
                if kind == "blob":
                    items.append((name.decode("utf-8", errors="surrogateescape"), blob))
            trees[sha] = items
        tags = _git(
            path, "for-each-ref", "refs/tags", "--format=%(refname:short)%00%(objectname)%00%(*objectname)"
        )
        tag_list = [line.split("\x00") for line in tags.decode().splitlines()]
        release = _release_texts(ctx, source, {n: p or o for n, o, p in tag_list}, trees)
        blobs = sorted({blob for items in trees.values() for _, blob in items})
        digests, contents = _blob_digests(path, blobs, {blob for _, blob in release[1]})
        for sha, parents, when in commits:
            node = ctx.iri("commit", source.rel, sha)
            add(node, RDF_TYPE, PG.Commit)
            add(node, PG.commitId, sha)
            add(node, PG.repository, repo)
            add(node, PG.committedAt, dt.datetime.fromisoformat(when))
            for parent in parents:
                add(node, PG.parentCommit, ctx.iri("commit", source.rel, parent))
            for name, blob in trees[sha]:
                key = (name, blob)
                if key not in entries:
                    entry = ctx.iri("git-entry", source.rel, name, blob)
                    entries[key] = entry
                    digest, size = digests[blob]
                    add(entry, RDF_TYPE, PG.GitEntry)
                    add(entry, PG.memberPath, name)
                    add(entry, PG.gitBlob, blob)
                    add(entry, PG.sha256, digest)
                    add(entry, PG.byteSize, size)
                    add(entry, PG.repository, repo)
                add(node, PG.containsMember, entries[key])
            ctx.record()
        for name, obj, peeled in tag_list:
            tag = ctx.iri("tag", source.rel, name)
            add(tag, RDF_TYPE, PG.Tag)
            add(tag, PG.name, name)
            add(tag, PG.repository, repo)
            add(tag, PG.tagOf, ctx.iri("commit", source.rel, peeled or obj))
            ctx.record()
        tag_name, texts = release
        registry = Registry(ctx.bundle.contract.section("release"))
        repo_parts = [] if source.rel == "." else source.rel.split("/")
        for name, blob in texts:
            if blob not in contents:
                continue  # larger than MAX_TEXT_BYTES: hashed, not read
            entry = entries[(name, blob)]
            add(entry, PG.path, "/".join([*repo_parts, name]) + f"@{tag_name}")
            text = contents[blob].decode("utf-8-sig", errors="surrogateescape")
            keys = ("git", *repo_parts, tag_name, *name.split("/"))
            count = emit_text(
                ctx, enumerate(text.splitlines(), start=1), entry, keys, text_format(name), registry
            )
            for _ in range(count):
                ctx.record()


def _release_texts(
    ctx: ImportContext, source: Source, tags: dict[str, str], trees: dict[str, list[tuple[str, str]]]
) -> tuple[str, list[tuple[str, str]]]:
    """The release tag and the (path, blob) of each ``[release].texts`` file in its tree.

    Only the tag ``[release].version`` names is the release: reading an older tag's texts as
    released would report values that were current then and superseded since."""
    section = ctx.bundle.contract.section("release") or {}
    version = section.get("version")
    texts = matcher(section.get("texts", [])) if section else None
    if not version or texts is None:
        return "", []
    name = next((n for n in (f"v{version}", str(version)) if n in tags), None)
    if name is None or tags[name] not in trees:
        return "", []
    found = [
        (path, blob)
        for path, blob in trees[tags[name]]
        if texts.match(path) or texts.match(posixpath.join(source.rel, path))
    ]
    return name, found


def _blob_digests(
    repo: Path, blobs: list[str], keep: set[str] = frozenset()
) -> tuple[dict[str, tuple[str, int]], dict[str, bytes]]:
    """SHA-256 and size of each blob's bytes, read in one ``git cat-file --batch`` run, and the
    bytes of the blobs in ``keep`` (up to :data:`MAX_TEXT_BYTES` each)."""
    if not blobs:
        return {}, {}
    raw = _git(repo, "cat-file", "--batch", data=("\n".join(blobs) + "\n").encode())
    found: dict[str, tuple[str, int]] = {}
    kept: dict[str, bytes] = {}
    pos = 0
    for blob in blobs:
        end = raw.index(b"\n", pos)
        header = raw[pos:end].decode().split()
        size = int(header[2])
        content = raw[end + 1 : end + 1 + size]
        found[blob] = (hashlib.sha256(content).hexdigest(), size)
        if blob in keep and size <= MAX_TEXT_BYTES:
            kept[blob] = content
        pos = end + 1 + size + 1
    return found, kept
