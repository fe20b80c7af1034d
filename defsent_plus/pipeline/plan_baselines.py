"""The training-free baselines of a plan (003): their encoders, grids, forward-pass requests, caches and fit
corpus. Part of :class:`defsent_plus.pipeline.plan.Plan`."""

from __future__ import annotations

from defsent_plus.baselines.spec import check_grid, extraction_request
from defsent_plus.errors import DefSentError
from defsent_plus.pipeline.dag import EncoderId, acquired_data, baseline_cache, baselines_file, subset_file


class BaselinesPlan:
    """What a config's baselines compute: encoders, grids, requests, caches, the fit corpus."""

    config: dict  # the validated config (set by Plan)

    def check_baselines(self) -> None:
        """Every baseline encoder is an encoder of this DAG, its grid exists and names only known things."""
        baselines = self.config.get("baselines", {})
        for name, grid in baselines.get("encoders", {}).items():
            key = f"config: baselines.encoders.{name}"
            try:
                encoder = EncoderId.parse(name)
            except ValueError as err:
                raise DefSentError(key, str(err)) from None
            if encoder.kind == "base":
                self._require_model(key, encoder.model)
            elif encoder.run not in self.config["runs"] or encoder.step > self.final_step(encoder.run) or (
                    encoder.kind == "candidate" and encoder not in self.candidates(encoder.run, encoder.step)):
                raise DefSentError(key, f"{name!r} is not an encoder of this config's runs")
            if grid not in baselines.get("grids", {}):
                raise DefSentError(key, f"no grid named {grid!r} (configured: {sorted(baselines.get('grids', {}))})")
        for name, grid in baselines.get("grids", {}).items():
            check_grid(grid, baselines.get("templates", {}), f"config: baselines.grids.{name}")
        fit = baselines.get("fit_corpus", {})
        if not fit.get("file") and fit.get("dataset", "a") not in {"a", "b", "c", *self.config.get("subsets", {})}:
            raise DefSentError("config: baselines.fit_corpus.dataset", f"unknown dataset {fit['dataset']!r}")

    def baseline_encoders(self) -> list[str]:
        return list(self.config.get("baselines", {}).get("encoders", {}))

    def baseline_grid(self, encoder: str) -> dict:
        baselines = self.config["baselines"]
        return baselines["grids"][baselines["encoders"][encoder]]

    def baseline_grid_key(self, encoder: str) -> str:
        return f"config: baselines.grids.{self.config['baselines']['encoders'][encoder]}"

    def baseline_request(self, encoder: str, template: str) -> dict:
        """What the (encoder, template) forward pass computes (its job's params)."""
        return extraction_request(self.baseline_grid(encoder), template, self.config["baselines"]["templates"])

    def baseline_templates(self, encoder: str) -> dict[str, str]:
        """The user templates an encoder's grid uses (its grid job's params)."""
        custom = self.config["baselines"]["templates"]
        return {name: custom[name] for name in self.baseline_grid(encoder)["templates"] if name in custom}

    def baseline_caches(self, encoder: str) -> dict[str, str]:
        """An encoder's cache directory per template of its grid."""
        return {template: baseline_cache(encoder, template) for template in self.baseline_grid(encoder)["templates"]}

    def fit_corpus_inputs(self) -> dict[str, str | list[str]]:
        """The fit corpus' sources: its text file's acquired dataset, or the dictionary dataset and every held-out
        query file (none of those queries may enter the corpus)."""
        options = self.config["baselines"]["fit_corpus"]
        if options.get("file"):
            return {"corpus": list(acquired_data([options["file"]]).values())}
        dataset, *heldout = self.fit_corpus_datasets()
        return {"dataset": self.dataset_file(dataset), "queries": [subset_file(name, "queries.parquet")
                                                                  for name in heldout]}

    def fit_corpus_datasets(self) -> list[str]:
        """The dictionary datasets the fit corpus reads: its dataset, then every subset with a held-out split (none
        of whose queries may enter it); none where it is a text file."""
        options = self.config["baselines"]["fit_corpus"]
        if options.get("file"):
            return []
        return [options["dataset"], *(name for name in self.config.get("subsets", {})
                                      if self.heldout(name) is not None)]

    def baseline_targets(self) -> list[str]:
        """``rule all``'s part of the baselines: each encoder's grid table, summary and per-layer plot."""
        return [baselines_file(encoder, name) for encoder in self.baseline_encoders()
                for name in ("scores.tsv", "summary.md", "layers.png")]
