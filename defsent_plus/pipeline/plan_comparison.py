"""The comparison of a plan's runs: the STS and reverse-dictionary comparison tables, the per-pair
similarities of their intervals and paired tests, and the summary's pages and links. Part of
:class:`defsent_plus.pipeline.plan.Plan`."""

from __future__ import annotations

from defsent_plus.names import TRANSDUCTIVE_NOTE
from defsent_plus.pipeline.dag import (
    EncoderId,
    compare_file,
    run_file,
    score_file,
)


class ComparisonPlan:
    """What a config compares across its runs: tables, pairs, the summary's pages."""

    config: dict  # the validated config (set by Plan)

    def comparison_pages(self) -> list[str]:
        """The comparison tables' markdown pages, in the summary's order."""
        return [compare_file("sts.md"), *([compare_file("reverse_dictionary.md")] if self.heldout_runs() else [])]

    def run_details(self) -> list[dict]:
        """Per run, its method and the detail files the summary links to (those ``rule all`` builds for it)."""
        heldout = set(self.heldout_runs())
        return [{"run": run, "method": self.method(run).name,
                 "files": [run_file(run, name) for name in (*self.table_files(), "steps.tsv", "curves.png",
                                                             *(["reverse_dictionary.md"] if run in heldout else []))]}
                for run in self.config["runs"]]

    def table_title(self, run: str, title: str) -> str:
        """A run's table title, marked when its model is transductive."""
        return f"{title} ({TRANSDUCTIVE_NOTE})" if self.transductive(run) else title

    def sts_comparison(self) -> list[dict]:
        """Every run's STS table with its method and chain (rule compare_sts); transductive runs are marked."""
        return [{"run": run, "method": self.method(run).name, "chain": " → ".join(self.chain(run)),
                 "sts": run_file(run, "sts.tsv"), **({"transductive": True} if self.transductive(run) else {})}
                for run in self.config["runs"]]

    def comparison_pairs(self) -> list[str]:
        """The per-pair similarities of the comparison's intervals and paired tests: per run, per pooling, its
        starting model's and its final dev-selected model's, as the run's table scored them (asks the final
        selections: with ``evaluation.final: candidates`` the selected model is its winning candidate)."""
        return [score_file(encoder, "sts", pooling, "pairs.parquet") for run in self.config["runs"]
                for pooling in self.config["evaluation"]["poolings"]
                for encoder in (self.start(run), self.scored_final(run))]

    def comparison_scores(self) -> list[str]:
        """The score records beside :meth:`comparison_pairs`' files, whose provenance the comparison's page cites."""
        return [path.removesuffix(".pairs.parquet") + ".json" for path in self.comparison_pairs()]

    def scored_final(self, run: str) -> EncoderId:
        """A run's final dev-selected model under the name its STS table scores it by."""
        last = self.final_step(run)
        if self.config["evaluation"]["final"] == "best":
            return EncoderId.selected(run, last)
        best = self.selection(run, last)
        return EncoderId.candidate(run, last, best["space"], best["seed"])

    def reverse_dictionary_comparison(self) -> list[dict]:
        """Every held-out run's reverse dictionary (rule compare_reverse_dictionary)."""
        return [{"run": run, "json": run_file(run, "reverse_dictionary.json")} for run in self.heldout_runs()]

    def reverse_dictionary_comparison_targets(self) -> list[str]:
        """``rule all``'s reverse-dictionary comparison, where a run has a held-out split."""
        return [compare_file("reverse_dictionary.tsv")] if self.heldout_runs() else []
