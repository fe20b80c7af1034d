"""Command-line interface: ``defsent-plus <command>`` (encode, similarity, reverse-dictionary, predict-words,
export, setup-wordnet, rehearse)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.names import POOLINGS, TRAINING_POOLINGS


def read_sentences(args: argparse.Namespace) -> list[str]:
    """Sentences from the command line, or one a line from ``--file``; never empty."""
    sentences = list(args.sentences or [])
    if args.file:
        path = Path(args.file)
        if not path.is_file():
            raise DefSentError(path, "file not found")
        sentences += [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not sentences:
        raise DefSentError("input", "no sentences given (pass them as arguments or with --file)")
    return sentences


def embed(model: str, sentences: list[str], pooling: str):
    """``[n, hidden]`` float32 embeddings of ``sentences`` by the encoder in ``model``."""
    from defsent_plus.encoders.encoding import device_for_run
    from defsent_plus.encoders.models import load_encoder

    return load_encoder(model).to(device_for_run()).encode(sentences, pooling)


def cmd_encode(args: argparse.Namespace) -> None:
    from defsent_plus.io import write_npy

    vectors = embed(args.model, read_sentences(args), args.pooling)
    write_npy(args.output, vectors)
    print(f"wrote {vectors.shape[0]} x {vectors.shape[1]} embeddings to {args.output}")


def cmd_similarity(args: argparse.Namespace) -> None:
    import numpy as np

    a, b = embed(args.model, [args.first, args.second], args.pooling)
    print(f"{float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))):.4f}")


def cmd_reverse_dictionary(args: argparse.Namespace) -> None:
    from defsent_plus.methods.defsent_plus.reverse_dictionary import ReverseDictionary

    require_command(args.model, "reverse-dictionary")
    if not args.sentences or any(not s.strip() for s in args.sentences):
        raise DefSentError("query", "expected at least one non-empty sentence")
    search = None if args.search is None else searched_dataset(args.search, args.model)
    rd = ReverseDictionary(args.model, args.space, args.dataset, args.pooling, args.scoring, args.cosine_space,
                           search, args.cache_dir)
    if rd.note:
        print(f"note: {rd.note}", file=sys.stderr)
    hint = "" if search else "; --search a ranks every entry of dataset a"
    print(f"candidates: {rd.searched}{hint}", file=sys.stderr)
    scores = rd.scores(args.sentences)  # encoded once, for the top-k and the expected headwords alike
    for i, (sentence, ranked) in enumerate(zip(args.sentences, rd.top(scores, args.top_k), strict=True)):
        print(sentence)
        for rank, (entry, score) in enumerate(ranked, start=1):
            print(f"  {rank:2d}. {entry}\t{score:.3f}")
        expected = [(args.expect, f"expected {args.expect!r}")] if args.expect else []
        expected += [(entry, f"{entry!r}, which has this sentence as a definition in {where}")
                     for entry, where in verbatim_owners(rd, sentence)]
        for entry, label in expected:
            ranks = rd.expected_ranks(scores[i : i + 1], entry)
            print(f"  {label}: " + (f"rank {ranks[0]:,} of {len(rd.entries):,}" if ranks else
                                    "not among the candidates, so no ranking here can find it"))


def searched_dataset(search: str, model: str) -> Path:
    """The dataset ``--search`` names: a parquet path, or a, b, c of the dictionary stage of the config that trained
    ``model`` (in the model's workflow folder, else in the current folder)."""
    from defsent_plus.dictionary.datasets import DATASETS
    from defsent_plus.pipeline import dag
    from defsent_plus.recorded_paths import dictionary_folder, locate, model_folders

    if search not in DATASETS:
        if not Path(search).is_file():
            raise DefSentError(search, f"--search: expected a dataset parquet or one of {list(DATASETS)} (the "
                                       "dictionary stage's datasets)")
        return Path(search)
    recorded = Path(dictionary_folder(model, str(Path(dag.dictionary_file(search)).parent))) / f"{search}.parquet"
    return locate(recorded, model_folders(model), f"--search {search}", f"dataset {search} of the dictionary stage",
                  "pass its parquet's path")


def verbatim_owners(rd, sentence: str) -> list[tuple[str, str]]:
    """(entry, dataset) for each entry that has ``sentence`` as a definition in the searched dataset or, when a
    subset is searched, in the whole dataset it was drawn from (a subset records it)."""
    from defsent_plus.dictionary.table import SOURCE_DATASET, entries_defined_as, read_dataset
    from defsent_plus.recorded_paths import located

    frames = {str(rd.dataset_path): rd.frame}
    source = rd.frame.attrs.get(SOURCE_DATASET)
    found = located(source, rd.folders) if source else None
    if found is not None:
        frames[source] = read_dataset(found)
    owners = {}
    for where, frame in reversed(frames.items()):  # the whole dataset first: it names every owner
        for entry in entries_defined_as(frame, sentence):
            owners.setdefault(entry, where)
    return list(owners.items())


def require_command(model: str, command: str) -> None:
    """Fail early when the method a model was trained with (its training card) does not support ``command``,
    naming the commands it does support. A model without a card (a base model) is not checked."""
    from defsent_plus.methods import method_of
    from defsent_plus.names import TRAINING_CARD
    from defsent_plus.recorded_paths import training_card

    trained_with = training_card(model).get("method")
    if trained_with is None:
        return
    method = method_of(trained_with, f"{Path(model) / TRAINING_CARD}: method")
    if command not in method.commands:
        raise DefSentError(model, f"a {method.name} model ({method.paper}) does not support `{command}`; its "
                                  f"commands: {', '.join(method.commands)}")


def cmd_predict_words(args: argparse.Namespace) -> None:
    from defsent_plus.methods.defsent.objective import predict_words

    if not args.definitions:
        raise DefSentError("input", "no definitions given (pass them as arguments)")
    if args.top_k < 1:
        raise DefSentError("--top-k", f"expected at least 1, got {args.top_k}")
    require_command(args.model, "predict-words")
    warning = untrained_head_warning(args.model)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    predictions = predict_words(args.model, args.definitions, args.top_k, args.pooling)
    for definition, ranked in zip(args.definitions, predictions, strict=True):
        print(definition)
        for rank, (word, probability) in enumerate(ranked, start=1):
            print(f"  {rank:2d}. {word}\t{probability:.4g}")


def untrained_head_warning(model: str) -> str:
    """Why a DefSent model's predicted words are meaningless ('' if they need not be): its training card records a
    masked-LM head that was initialised (or partly initialised), not pretrained. Only the card's ``head`` record is
    read: a model without a card or without that record gets no warning, and the training's fit is not consulted."""
    from defsent_plus.recorded_paths import training_card

    head = training_card(model).get("head") or {}
    if head.get("head", "pretrained") == "pretrained":
        return ""
    return (f"this model's masked-LM head was {head['head']} (seed {head.get('seed')}), not pretrained: its words "
            "are meaningless until the head is trained at scale (a full DefSent run on a GPU)")


def cmd_export(args: argparse.Namespace) -> None:
    from defsent_plus.encoders.export import export_huggingface, export_sentence_transformers, push_to_hub
    from defsent_plus.encoders.model_card import model_card

    card = model_card(args.model, args.pooling, name=args.name)
    print(export_huggingface(args.model, Path(args.output) / "huggingface"))
    exported = export_sentence_transformers(args.model, Path(args.output) / "sentence-transformers", args.pooling,
                                            args.max_length, card)
    print(exported)
    if args.push_to_hub:
        print(push_to_hub(exported, args.push_to_hub))


def cmd_setup_wordnet(args: argparse.Namespace) -> None:
    from defsent_plus.dictionary.sources import prepare_wordnet

    print(prepare_wordnet(args.target, args.source))


def cmd_rehearse(args: argparse.Namespace) -> None:
    import logging

    from defsent_plus.rehearsal.costs import write_cost_sheet
    from defsent_plus.rehearsal.runner import REPO, prepare, rehearsal_name, run, senteval_dir

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.sheet_only:
        workdir = REPO / "rehearsals" / rehearsal_name(Path(args.config), args.size)
        print(f"cost sheet: {write_cost_sheet(workdir, senteval_dir())}")
        return
    workdir = prepare(Path(args.config), args.size)
    print(f"rehearsal of {args.config} ({args.size} size) prepared in {workdir}")
    if args.prepare_only:
        return
    code = run(workdir, *args.snakemake)
    if code:
        raise DefSentError(workdir, f"the rehearsal's Snakemake failed (exit {code}); logs: {workdir}/logs")
    if not args.snakemake:  # a whole run: its cost sheet
        print(f"cost sheet: {write_cost_sheet(workdir, senteval_dir())}")


def cmd_estimate(args: argparse.Namespace) -> None:
    from defsent_plus.rehearsal.estimate import assumptions, estimate, markdown_table, read_config, reservation_table

    if args.gpus < 1:
        raise DefSentError("--gpus", f"expected at least 1 GPU, got {args.gpus}")
    estimates = {Path(path).name: estimate(read_config(Path(path))) for path in args.configs}
    print(markdown_table(estimates), reservation_table(estimates, args.gpus), assumptions(args.gpus), sep="\n\n")


def arg(*flags: str, **options) -> tuple[tuple[str, ...], dict]:
    """One ``add_argument`` call of a command, as data."""
    return flags, options


MEAN_POOLING = arg("--pooling", default="mean", choices=POOLINGS)
TRAINING_POOLING = arg("--pooling", choices=TRAINING_POOLINGS, help="default: the training pooling")
COMMANDS = {  # name -> (function, help, arguments)
    "encode": (cmd_encode, "sentences -> .npy embeddings", [
        arg("--model", required=True, help="encoder directory (e.g. results/<run>/step3/best)"),
        MEAN_POOLING,
        arg("--output", "-o", required=True, help="output .npy"),
        arg("sentences", nargs="*", help="sentences (or use --file)"),
        arg("--file", help="a UTF-8 file with one sentence a line")]),
    "similarity": (cmd_similarity, "cosine similarity of two sentences", [
        arg("--model", required=True), MEAN_POOLING, arg("first"), arg("second")]),
    "reverse-dictionary": (cmd_reverse_dictionary, "top-k entries for a definition-like sentence", [
        arg("--model", required=True, help="a trained model directory of this workflow"),
        arg("--space", help="entry space .npy (default: the one the model was trained on)"),
        arg("--dataset", help="dataset parquet (default: the one the model was trained on)"),
        TRAINING_POOLING,
        arg("--scoring", choices=("dot", "cosine"),
            help="dot: the trained pooler's h · Eᵀ; cosine: the mean-pooled sentence against an AMP entry space "
                 "(default: dot, or cosine when the model's training did not fit its objective)"),
        arg("--cosine-space", help="AMP entry space .npy for --scoring cosine (default: amp.npy beside the trained "
                                   "space)"),
        arg("--top-k", type=int, default=10),
        arg("--expect", help="a headword you expect: its rank, or that it is not among the candidates"),
        arg("--search", help="rank every entry of this dataset instead (a, b, c of the workflow's dictionary stage, "
                             "or a dataset parquet), in the model's space extended to it; the first query encodes "
                             "its definitions once (cached)"),
        arg("--cache-dir", help="where --search caches entry vectors (default: $DEFSENT_PLUS_CACHE, else "
                                "~/.cache/defsent-plus)"),
        arg("sentences", nargs="+")]),
    "predict-words": (cmd_predict_words, "top-k words for a definition (DefSent-trained model)", [
        arg("--model", required=True, help="a DefSent-trained model directory (with its masked-LM head)"),
        TRAINING_POOLING,
        arg("--top-k", type=int, default=10),
        arg("definitions", nargs="*")]),
    "export": (cmd_export, "Hugging Face + sentence-transformers directories", [
        arg("--model", required=True),
        arg("--pooling", default="mean", choices=POOLINGS, help="the sentence vector the exported "
            "sentence-transformers model gives (prompt: a module of its own, loaded with trust_remote_code=True)"),
        arg("--max-length", type=int, default=128, help="the exported model's max_seq_length"),
        arg("--name", help="the model card's title (default: the run and step, e.g. \"default, step 3 "
                           "(dev-selected)\", else the model directory's name)"),
        arg("--push-to-hub", metavar="REPO_ID", help="also upload the sentence-transformers directory to this "
                                                     "Hugging Face Hub repository (online)"),
        arg("--output", "-o", required=True, help="directory to create")]),
    "setup-wordnet": (cmd_setup_wordnet, "copy Debian's WordNet 3.0 into an nltk_data root", [
        arg("--target", default="nltk_data", help="nltk_data root to create (default: nltk_data)"),
        arg("--source", default="/usr/share/wordnet", help="directory of WordNet's dict files")]),
    "rehearse": (cmd_rehearse, "run a config on random weights of its real architectures and capped stand-in "
                               "data, offline (docs/rehearsal.md)", [
        arg("config", help="the config to rehearse, e.g. configs/bert-base.yaml; arguments after -- go to "
                           "Snakemake (e.g. -- -n)"),
        arg("--size", choices=("full", "tiny"), default="full",
            help="full: the real architectures (default); tiny: tiny ones, minimal caps"),
        arg("--prepare-only", action="store_true", help="build models, stand-ins and the config only"),
        arg("--sheet-only", action="store_true", help="(re)write the cost sheet of a finished rehearsal")]),
    "estimate": (cmd_estimate, "a config's GPU-hours (the work, and what its SLURM requests reserve), wall time on "
                               "--gpus N, peak GPU memory of training and disk, counted without running it, with "
                               "what they assume (docs/rehearsal.md)", [
        arg("configs", nargs="+", help="config files, e.g. configs/*.yaml"),
        arg("--gpus", type=int, default=1, help="the wall time on this many GPUs (default: 1)")]),
}


def build_parser() -> argparse.ArgumentParser:
    """``defsent-plus``'s parser: one subcommand for each of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(prog="defsent-plus", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (function, help_text, arguments) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        for flags, options in arguments:
            command.add_argument(*flags, **options)
        command.set_defaults(func=function)
    return parser


def split_passed(argv: list[str]) -> tuple[list[str], list[str]]:
    """``rehearse``'s own arguments and what follows its ``--`` (Snakemake's); other commands keep their ``--``
    (e.g. before a sentence that starts with a dash)."""
    if argv[:1] != ["rehearse"] or "--" not in argv:
        return argv, []
    return argv[: argv.index("--")], argv[argv.index("--") + 1:]


def main(argv: list[str] | None = None) -> int:
    own, passed = split_passed(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(own)
    args.snakemake = passed
    try:
        args.func(args)
    except DefSentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
