"""The reverse dictionary on a run's held-out entries, by the protocol its method declares (rule
``reverse_dictionary``): for every run whose dataset is a subset with a held-out split and whose method has one; and
every such run side by side (rule ``compare_reverse_dictionary``), each method's rows read by its own protocol."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.evaluators.base import Evaluator
from defsent_plus.methods import method_of
from defsent_plus.methods.base import ReverseDictionaryProtocol


def protocol_of(method: str, where: str = "reverse dictionary") -> ReverseDictionaryProtocol:
    """The reverse-dictionary protocol ``method`` declares."""
    protocol = method_of(method, where).reverse_dictionary
    if protocol is None:
        raise DefSentError(where, f"method {method!r} declares no reverse-dictionary protocol")
    return protocol


def write_run_reverse_dictionary(*, method: str, **job) -> dict:
    """A run's reverse dictionary by its method's declared protocol (``job``: the protocol writer's arguments)."""
    protocol = protocol_of(method)
    return protocol.write(method=method, description=protocol.description, **job)


def write_comparison(*, runs: Sequence[dict], out_tsv: str | Path, out_md: str | Path,
                     out_paired: str | Path | None = None):
    """Every held-out run's reverse dictionary side by side (``runs``: ``run``, ``json``)."""
    from defsent_plus.evaluation.comparison import write_reverse_dictionary_comparison  # pandas
    from defsent_plus.io import read_json

    methods = {read_json(r["json"])["method"]: r["json"] for r in runs}
    protocols = {method: protocol_of(method, f"{json}: method") for method, json in methods.items()}
    return write_reverse_dictionary_comparison(runs, out_tsv, out_md, out_paired, protocols=protocols)


EVALUATOR = Evaluator(
    name="reverse_dictionary",
    description="held-out definitions ranking their entries, by each method's protocol, with intervals",
    targets=lambda plan: plan.reverse_dictionary_targets(),
)
