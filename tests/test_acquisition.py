"""Data acquisition: downloads from a local HTTP server (resume, retries, checksums, 404), archives in the official
layouts, local mirrors, and the repository's SentEval checksums against the real data."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from defsent_plus.acquisition.catalog import (
    CATALOG,
    Archive,
    DataSpec,
    archives_from_config,
    identity,
    mirror_variable,
    resolve,
)
from defsent_plus.acquisition.download import Retry, fetch, partial_path
from defsent_plus.acquisition.layout import RECORD, SUMS, acquire, read_manifest
from defsent_plus.errors import DefSentError
from defsent_plus.io import file_sha256

NO_WAIT = Retry(attempts=3, backoff_seconds=0.0, timeout_seconds=10)
SENTEVAL_FIXTURE = FIXTURES / "senteval"
FIXTURE_MANIFEST = FIXTURES / "senteval.sha256"


class FileServer:
    """Serves ``files`` (URL path -> bytes) with HTTP Range support; ``cut`` makes the first response to a path
    stop after that many bytes. Records every request's path and Range header."""

    def __init__(self, files: dict[str, bytes], cut: dict[str, int] | None = None):
        self.files, self.cut, self.requests = files, dict(cut or {}), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Range")))
                if self.path not in server.files:
                    self.send_error(404)
                    return
                body = server.files[self.path]
                start = int(self.headers["Range"].split("=")[1].split("-")[0]) if self.headers.get("Range") else 0
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                stop = server.cut.pop(self.path, None)
                self.wfile.write(body[start:stop] if stop is not None else body[start:])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(files, cut=None):
        servers.append(FileServer(files, cut))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def tar_of(root: Path, prefix: str) -> bytes:
    """A gzipped tar of ``root``'s files under ``prefix`` (SentEval's processed data as one archive)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            tar.add(path, arcname=f"{prefix}/{path.relative_to(root).as_posix()}")
    return buffer.getvalue()


def oxford_zip() -> bytes:
    """Ishiwatari et al.'s naacl_data.zip layout: data/<dictionary>/{train,valid,test}.txt."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for split in ("train", "valid", "test"):
            archive.write(FIXTURES / "oxford" / f"{split}.txt", f"data/oxford/{split}.txt")
            archive.writestr(f"data/wordnet/{split}.txt", "other dictionary\n")
    return buffer.getvalue()


SENTEVAL_SPEC = DataSpec("senteval", archives=())


def test_download_of_the_processed_senteval_tar_gives_the_verified_layout(serve, tmp_path):
    server = serve({"/senteval.tar.gz": tar_of(SENTEVAL_FIXTURE, "SentEval/data/downstream")})
    archives = (Archive(f"{server.url}/senteval.tar.gz", "tar"),)  # root auto-detected
    out = tmp_path / "data" / "senteval"
    record = acquire(SENTEVAL_SPEC, out, None, "copy", FIXTURE_MANIFEST, tmp_path / "downloads", NO_WAIT, archives)
    expected = read_manifest(FIXTURE_MANIFEST)
    assert {name: file_sha256(out / name) for name in expected} == expected
    assert read_manifest(out / SUMS) == read_manifest(FIXTURE_MANIFEST)  # exactly the layout, nothing else
    assert record["verified"] and record["archives"] == [archives[0].url]
    assert json.loads((out / RECORD).read_text())["files"] == len(read_manifest(FIXTURE_MANIFEST))


def test_a_cut_connection_is_resumed_with_a_range_request(serve, tmp_path):
    body = bytes(range(256)) * 400
    server = serve({"/big.bin": body}, cut={"/big.bin": 30_000})
    path = fetch(f"{server.url}/big.bin", tmp_path / "big.bin", sha256=None, retry=NO_WAIT)
    assert path.read_bytes() == body
    assert server.requests == [("/big.bin", None), ("/big.bin", "bytes=30000-")]
    assert not partial_path(path).exists()


def test_a_partial_file_left_by_an_earlier_run_is_continued(serve, tmp_path):
    body = b"0123456789" * 1000
    server = serve({"/f.txt": body})
    partial_path(tmp_path / "f.txt").write_bytes(body[:1234])
    fetch(f"{server.url}/f.txt", tmp_path / "f.txt", retry=NO_WAIT)
    assert (tmp_path / "f.txt").read_bytes() == body
    assert server.requests == [("/f.txt", "bytes=1234-")]


def test_checksum_mismatch_removes_the_file_and_says_what_to_do(serve, tmp_path):
    server = serve({"/senteval.tar.gz": tar_of(SENTEVAL_FIXTURE, "senteval")})
    wrong = "0" * 64
    with pytest.raises(DefSentError, match="SHA-256 mismatch.*expected 0{64}.*place it by hand"):
        fetch(f"{server.url}/senteval.tar.gz", tmp_path / "senteval.tar.gz", sha256=wrong, retry=NO_WAIT)
    assert not (tmp_path / "senteval.tar.gz").exists()
    out = tmp_path / "data" / "senteval"
    archives = (Archive(f"{server.url}/senteval.tar.gz", "tar", sha256=wrong),)
    with pytest.raises(DefSentError, match="could not be obtained.*SHA-256 mismatch"):
        acquire(SENTEVAL_SPEC, out, None, "copy", FIXTURE_MANIFEST, tmp_path / "downloads", NO_WAIT, archives)
    assert not out.exists() and not list((tmp_path / "data").iterdir())  # no partial output
    assert not list((tmp_path / "downloads" / "senteval").iterdir())


def test_404_is_not_retried_and_names_the_url(serve, tmp_path):
    server = serve({})
    with pytest.raises(DefSentError, match=r"missing\.zip: HTTP 404.*place it by hand at .*missing\.zip"):
        fetch(f"{server.url}/missing.zip", tmp_path / "missing.zip", retry=NO_WAIT)
    assert len(server.requests) == 1


def test_server_errors_are_retried_then_reported(serve, tmp_path):
    server = serve({})
    server.httpd.RequestHandlerClass.do_GET = lambda self: (server.requests.append(self.path), self.send_error(503))
    with pytest.raises(DefSentError, match="failed after 3 attempts.*503"):
        fetch(f"{server.url}/flaky.zip", tmp_path / "flaky.zip", retry=NO_WAIT)
    assert len(server.requests) == 3


def test_later_archives_fill_in_what_earlier_ones_could_not_give(serve, tmp_path):
    files = read_manifest(FIXTURE_MANIFEST)
    target = "STS/STSBenchmark/sts-dev.csv"
    server = serve({"/all_but_one.tar.gz": _tar_without(target),
                    "/sts-dev.csv": (SENTEVAL_FIXTURE / target).read_bytes()})
    archives = (Archive(f"{server.url}/gone.tar", "tar"), Archive(f"{server.url}/all_but_one.tar.gz", "tar"),
                Archive(f"{server.url}/sts-dev.csv", "file", target))
    out = tmp_path / "senteval"
    record = acquire(SENTEVAL_SPEC, out, None, "copy", FIXTURE_MANIFEST, tmp_path / "dl", NO_WAIT, archives)
    assert record["archives"] == [archives[1].url, archives[2].url]
    assert all(file_sha256(out / name) == digest for name, digest in files.items())


def _tar_without(excluded: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(p for p in SENTEVAL_FIXTURE.rglob("*") if p.is_file()):
            name = path.relative_to(SENTEVAL_FIXTURE).as_posix()
            if name != excluded:
                tar.add(path, arcname=f"downstream/{name}")
    return buffer.getvalue()


def test_oxford_zip_without_a_manifest_records_the_checksums_it_got(serve, tmp_path):
    server = serve({"/naacl_data.zip": oxford_zip()})
    spec = CATALOG["oxford"]
    archive = Archive(f"{server.url}/naacl_data.zip", "zip", "data/oxford")
    out = tmp_path / "oxford"
    record = acquire(spec, out, None, "copy", None, tmp_path / "dl", NO_WAIT, (archive,))
    assert not record["verified"]
    assert sorted(p.name for p in out.iterdir()) == sorted([RECORD, SUMS, "test.txt", "train.txt", "valid.txt"])
    assert (out / "train.txt").read_bytes() == (FIXTURES / "oxford" / "train.txt").read_bytes()
    assert read_manifest(out / SUMS)["valid.txt"] == file_sha256(FIXTURES / "oxford" / "valid.txt")


def test_an_archive_placed_by_hand_is_used_without_downloading(serve, tmp_path):
    server = serve({})
    (tmp_path / "dl" / "oxford").mkdir(parents=True)
    (tmp_path / "dl" / "oxford" / "naacl_data.zip").write_bytes(oxford_zip())
    archive = Archive(f"{server.url}/naacl_data.zip", "zip", "data/oxford")
    acquire(CATALOG["oxford"], tmp_path / "oxford", None, "copy", None, tmp_path / "dl", NO_WAIT, (archive,))
    assert server.requests == [] and (tmp_path / "oxford" / "test.txt").is_file()


@pytest.mark.parametrize("link", ["copy", "symlink"])
def test_a_mirror_is_copied_or_linked_and_checked(tmp_path, link):
    out = tmp_path / "senteval"
    record = acquire(SENTEVAL_SPEC, out, SENTEVAL_FIXTURE, link, FIXTURE_MANIFEST, tmp_path / "dl")
    name = "STS/STS15-en-test/STS.gs.images.txt"
    assert (out / name).is_symlink() == (link == "symlink")
    assert (out / name).read_bytes() == (SENTEVAL_FIXTURE / name).read_bytes()
    assert record["source"].startswith("mirror") and record["verified"]


def test_a_mirror_with_a_changed_or_missing_file_is_refused(tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(SENTEVAL_FIXTURE, mirror)
    (mirror / "SICK" / "SICK_test_annotated.txt").write_text("changed\n")
    with pytest.raises(DefSentError, match=r"1 mirror files differ.*SICK_test_annotated\.txt"):
        acquire(SENTEVAL_SPEC, tmp_path / "out", mirror, "copy", FIXTURE_MANIFEST, tmp_path / "dl")
    (mirror / "SICK" / "SICK_test_annotated.txt").unlink()
    with pytest.raises(DefSentError, match="mirror lacks 1 of"):
        acquire(SENTEVAL_SPEC, tmp_path / "out", mirror, "copy", FIXTURE_MANIFEST, tmp_path / "dl")
    assert not (tmp_path / "out").exists()


def test_without_a_manifest_a_mirror_gives_its_whole_layout_and_nothing_is_acquired_empty(tmp_path):
    out = tmp_path / "senteval"
    record = acquire(SENTEVAL_SPEC, out, SENTEVAL_FIXTURE, "copy", None, tmp_path / "dl")  # checksums: null
    every = sorted(p.relative_to(SENTEVAL_FIXTURE).as_posix() for p in SENTEVAL_FIXTURE.rglob("*") if p.is_file())
    assert record["files"] == len(every) > 0 and not record["verified"]
    assert sorted(read_manifest(out / SUMS)) == every
    again = acquire(SENTEVAL_SPEC, tmp_path / "again", out, "copy", None, tmp_path / "dl")  # an acquisition as mirror
    assert again["files"] == len(every)
    with pytest.raises(DefSentError, match=r"config: data\.senteval: no files to acquire"):
        acquire(SENTEVAL_SPEC, tmp_path / "none", None, "copy", None, tmp_path / "dl")  # archives, no layout
    assert not (tmp_path / "none").exists()


def test_a_malformed_manifest_names_its_line(tmp_path):
    manifest = tmp_path / "bad.sha256"
    manifest.write_text(f"{'a' * 64}  ok.txt\nnot a checksum line\n")
    with pytest.raises(DefSentError, match=r"bad\.sha256:2: expected"):
        read_manifest(manifest)


def test_settings_mirror_variable_wins_and_identity_ignores_where_data_comes_from(monkeypatch, tmp_path):
    block = {"mirror": "/somewhere", "link": "copy", "checksums": "default", "archives": None}
    data = {"senteval": block, "download": {"attempts": 2, "backoff_seconds": 0.5, "timeout_seconds": 5}}
    monkeypatch.delenv(mirror_variable("senteval"), raising=False)
    settings = resolve("senteval", data, REPO)
    assert settings.mirror == "/somewhere" and settings.manifest == REPO / "data/checksums/senteval.sha256"
    monkeypatch.setenv("DEFSENT_SENTEVAL", str(tmp_path))
    moved = resolve("senteval", data, REPO)
    assert moved.mirror == str(tmp_path) and identity(moved) == identity(settings)
    with pytest.raises(DefSentError, match=r"data\.senteval\.checksums"):
        resolve("senteval", {**data, "senteval": {**block, "checksums": str(tmp_path / "none.sha256")}}, REPO)


def test_repository_checksums_describe_the_real_senteval_data(senteval_dir):
    """The manifest kept in the repository matches the SentEval data this machine has (every layout file)."""
    manifest = read_manifest(REPO / "data" / "checksums" / "senteval.sha256")
    assert len(manifest) == 72
    assert {name: file_sha256(Path(senteval_dir) / name) for name in manifest} == manifest


def test_catalog_urls_are_the_official_ones():
    urls = [archive.url for archive in CATALOG["senteval"].archives + CATALOG["oxford"].archives]
    assert any(url.endswith("datasets-for-simcse/resolve/main/senteval.tar") for url in urls)
    assert "http://www.tkl.iis.u-tokyo.ac.jp/~ishiwatari/naacl_data.zip" in urls
    assert all(os.path.basename(url) for url in urls)


def test_an_unreadable_archive_is_removed_and_reported(serve, tmp_path):
    server = serve({"/naacl_data.zip": b"this is an HTML error page, not a zip"})
    archive = Archive(f"{server.url}/naacl_data.zip", "zip", "data/oxford")
    with pytest.raises(DefSentError, match=r"not a readable zip archive .*removed it"):
        acquire(CATALOG["oxford"], tmp_path / "oxford", None, "copy", None, tmp_path / "dl", NO_WAIT, (archive,))
    assert not (tmp_path / "dl" / "oxford" / "naacl_data.zip").exists() and not (tmp_path / "oxford").exists()


def test_archives_listed_in_config_are_checked():
    with pytest.raises(DefSentError, match=r"data\.x\.archives\[0\]\.kind: 'rar'"):
        archives_from_config([{"url": "http://h/a.rar", "kind": "rar"}], "config: data.x.archives")
    with pytest.raises(DefSentError, match=r"archives\[1\]\.root: a plain file needs root"):
        archives_from_config([{"url": "http://h/a.zip", "kind": "zip"}, {"url": "http://h/f.txt", "kind": "file"}],
                             "config: data.x.archives")
    assert archives_from_config([{"url": "http://h/f.txt", "kind": "file", "root": "f.txt"}], "k")[0].filename == \
        "f.txt"


def test_an_unknown_link_mode_names_its_key(tmp_path):
    with pytest.raises(DefSentError, match=r"data\.\*\.link: 'hardlink'"):
        acquire(SENTEVAL_SPEC, tmp_path / "out", SENTEVAL_FIXTURE, "hardlink", FIXTURE_MANIFEST, tmp_path / "dl")
    assert not (tmp_path / "out").exists()
