"""Command-line interface: ``defsent-plus <command>``."""

from __future__ import annotations

import argparse
import sys

from .errors import DefSentError


def setup_wordnet(args: argparse.Namespace) -> None:
    from .dictionary import prepare_wordnet

    print(prepare_wordnet(args.target, args.source))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="defsent-plus", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    wordnet = commands.add_parser("setup-wordnet", help="copy Debian's WordNet 3.0 into an nltk_data root")
    wordnet.add_argument("--target", default="nltk_data", help="nltk_data root to create (default: nltk_data)")
    wordnet.add_argument("--source", default="/usr/share/wordnet", help="directory of WordNet's dict files")
    wordnet.set_defaults(func=setup_wordnet)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except DefSentError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
