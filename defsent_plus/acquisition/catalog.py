"""Where each dataset's files come from: the official archives, in the order they are tried, as data; and a
dataset's settings resolved from config (``data.<name>``), with the identity that decides re-runs.

A dataset's layout is the list of files in its checksum manifest (``data/checksums/<name>.sha256``) or, where no
manifest is known, the files named here. An archive provides the layout files found under its ``root``.

Where the files come from (a mirror path, a host) is not part of the identity: with a checksum manifest the
content is pinned, so moving the mirror or switching to a download re-runs nothing. Without a manifest the
archives listed are the identity.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from defsent_plus.acquisition.download import Retry
from defsent_plus.errors import DefSentError
from defsent_plus.io import file_sha256

KINDS = ("file", "zip", "tar")  # tar: any compression tarfile reads


@dataclass(frozen=True)
class Archive:
    """One downloadable file and where the dataset's layout sits inside it."""

    url: str
    kind: str  # file | zip | tar
    root: str = ""  # zip/tar: the member folder that is the dataset's directory ("" = auto-detect); file: its path
    sha256: str | None = None  # pinned archive checksum, checked before unpacking
    listed_by: str = ""  # where the URL comes from

    @property
    def filename(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class DataSpec:
    """A dataset the workflow can acquire."""

    name: str
    archives: tuple[Archive, ...]
    files: tuple[str, ...] = ()  # the layout when there is no manifest
    manifest: str | None = None  # repository-relative default checksum manifest


SENTEVAL_SCRIPT = "SentEval data/downstream/get_transfer_data.bash"
SIMCSE_SCRIPT = "SimCSE SentEval/data/downstream/download_dataset.sh (SentEval's processed data, one tar)"
SIF = "https://raw.githubusercontent.com/PrincetonML/SIF/master/data"
SENTEVAL_S3 = "https://s3.amazonaws.com/senteval/senteval_data"

CATALOG = {
    "senteval": DataSpec(
        "senteval",
        archives=(
            # SentEval's script downloads raw STS/SICK/MR... archives and tokenises them with Moses and sed; the
            # processed result is published as one tar, which is what the layout's checksums describe.
            Archive("https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/senteval.tar",
                    "tar", listed_by=SIMCSE_SCRIPT),
            # Files SentEval's script takes as they are (no tokenisation): the fallback for these files.
            *(Archive(f"{SENTEVAL_S3}/msr_paraphrase_{split}.txt", "file", f"MRPC/msr_paraphrase_{split}.txt",
                      listed_by=SENTEVAL_SCRIPT) for split in ("train", "test")),
            *(Archive(f"{SIF}/sentiment-{split}", "file", f"SST/binary/sentiment-{split}", listed_by=SENTEVAL_SCRIPT)
              for split in ("train", "dev", "test")),
        ),
        manifest="data/checksums/senteval.sha256",
    ),
    "oxford": DataSpec(
        "oxford",
        archives=(Archive("http://www.tkl.iis.u-tokyo.ac.jp/~ishiwatari/naacl_data.zip", "zip", "data/oxford",
                          listed_by="DefSent experiments/scripts/download-dataset.sh (Ishiwatari et al. 2019)"),),
        files=("train.txt", "valid.txt", "test.txt"),
    ),
    "wiki1m": DataSpec(  # unsupervised SimCSE's training corpus: 10^6 English Wikipedia sentences
        "wiki1m",
        archives=(Archive("https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/"
                          "wiki1m_for_simcse.txt", "file", "wiki1m_for_simcse.txt",
                          listed_by="SimCSE data/download_wiki.sh"),),
        files=("wiki1m_for_simcse.txt",),
    ),
}


def archives_from_config(entries: list[dict], where: str) -> tuple[Archive, ...]:
    """Archives a user lists in config (``data.<name>.archives``) instead of the official ones."""
    archives = []
    for i, entry in enumerate(entries):
        archive = Archive(**entry)
        if archive.kind not in KINDS:
            raise DefSentError(f"{where}[{i}].kind", f"{archive.kind!r}; expected one of {list(KINDS)}")
        if archive.kind == "file" and not archive.root:
            raise DefSentError(f"{where}[{i}].root", "a plain file needs root: its path in the dataset's layout")
        archives.append(archive)
    return tuple(archives)


def mirror_variable(name: str) -> str:
    """The environment variable naming a local mirror of dataset ``name`` (it wins over config)."""
    return f"DEFSENT_{name.upper()}"


@dataclass(frozen=True)
class Acquisition:
    """A dataset's acquisition settings: where its files come from, how they are checked and placed."""

    spec: DataSpec
    mirror: str | None
    link: str
    manifest: Path | None
    archives: tuple[Archive, ...]
    retry: Retry


def resolve(name: str, data_config: dict, repo: str | Path) -> Acquisition:
    """The settings of ``data.<name>``; ``checksums: default`` is the repository's manifest for it, if any."""
    where = f"config: data.{name}"
    if name not in CATALOG:
        raise DefSentError(where, f"unknown dataset; expected one of {sorted(CATALOG)}")
    spec, block = CATALOG[name], data_config[name]
    manifest = block["checksums"]
    if manifest == "default":
        manifest = None if spec.manifest is None else Path(repo) / spec.manifest
    if manifest is not None and not Path(manifest).is_file():
        raise DefSentError(f"{where}.checksums", f"checksum manifest {manifest} not found")
    archives = archives_from_config(block["archives"], f"{where}.archives") if block["archives"] else spec.archives
    return Acquisition(spec, os.environ.get(mirror_variable(name)) or block["mirror"], block["link"],
                       None if manifest is None else Path(manifest), archives, Retry(**data_config["download"]))


def identity(settings: Acquisition) -> dict:
    """What the acquired content is: its manifest's SHA-256, or (unverified) the archives it comes from."""
    if settings.manifest is not None:
        return {"manifest_sha256": file_sha256(settings.manifest)}
    return {"archives": [[a.url, a.sha256] for a in settings.archives]}
