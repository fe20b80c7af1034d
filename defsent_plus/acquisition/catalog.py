"""Where each dataset's files come from: the official archives, in the order they are tried, as data.

A dataset's layout is the list of files in its checksum manifest (``data/checksums/<name>.sha256``) or, where no
manifest is known, the files named here. An archive provides the layout files found under its ``root``.
"""

from __future__ import annotations

from dataclasses import dataclass

from defsent_plus.errors import DefSentError

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


def spec_of(name: str) -> DataSpec:
    if name not in CATALOG:
        raise DefSentError(f"config: data.{name}", f"unknown dataset; expected one of {sorted(CATALOG)}")
    return CATALOG[name]


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
