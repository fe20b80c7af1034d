"""Installing WordNet 3.0 for nltk from Debian's packages (``defsent-plus setup-wordnet``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from defsent_plus.errors import DefSentError

WORDNET_SYSTEM_DIR = Path("/usr/share/wordnet")
WORDNET_FILES = (
    "adj.exc", "adv.exc", "noun.exc", "verb.exc", "cntlist.rev", "index.sense",
    "data.adj", "data.adv", "data.noun", "data.verb", "index.adj", "index.adv", "index.noun", "index.verb",
)
# WordNet 3.0's lexicographer files (lexnames(5WN)); Debian's packages do not ship this file.
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
LEXNAME_POS = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}


def lexnames_text() -> str:
    """The ``lexnames`` file nltk expects: number, lexicographer file and part-of-speech number per line."""
    lines = [f"{i:02d}\t{lex}\t{LEXNAME_POS[lex.split('.')[0]]}" for i, lex in enumerate(LEXNAMES)]
    return "\n".join(lines) + "\n"


def prepare_wordnet(target: str | Path, system_dir: str | Path = WORDNET_SYSTEM_DIR) -> Path:
    """Copy Debian's WordNet 3.0 files into ``target/corpora/wordnet`` with a generated ``lexnames`` file."""
    system_dir = Path(system_dir)
    out = Path(target) / "corpora" / "wordnet"
    missing = [f for f in WORDNET_FILES if not (system_dir / f).is_file()]
    if missing:
        raise DefSentError(system_dir, f"missing WordNet files {missing} (install wordnet-base wordnet-sense-index)")
    out.mkdir(parents=True, exist_ok=True)
    for file in WORDNET_FILES:
        shutil.copyfile(system_dir / file, out / file)
    (out / "lexnames").write_text(lexnames_text(), encoding="utf-8")
    return out
