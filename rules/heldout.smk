# Input functions of the held-out split (subsets.<name>.heldout) and the reverse-dictionary evaluation on it.
# They would belong in common.smk; they live here so that file keeps to the main DAG.
import re


def subset_heldout(name):
    """A subset's held-out split (subsets.<name>.heldout), or None (also for datasets a, b, c)."""
    return config.get("subsets", {}).get(name, {}).get("heldout")


def queries_path(name):
    """The reverse-dictionary queries held out of a subset with a held-out split."""
    if subset_heldout(name) is None:
        raise ValueError(f"dataset {name!r} has no held-out split: add subsets.{name}.heldout to the config")
    return f"results/dictionary/subsets/{name}.queries.parquet"


def subset_pattern(heldout):
    """Regex of the configured subsets with (or without) a held-out split; it matches nothing when there are none."""
    names = [re.escape(name) for name in config.get("subsets", {}) if (subset_heldout(name) is not None) == heldout]
    return "|".join(names) or "(?!)"


def heldout_runs():
    """Runs whose dataset is a subset with a held-out split."""
    return [run for run, cfg in config["runs"].items() if subset_heldout(cfg["dataset"]) is not None]


def reverse_dictionary_targets():
    return [f"results/{run}/eval/reverse_dictionary.json" for run in heldout_runs()]


def final_spaces(run):
    """The entry spaces of the final step's candidates (the dev-selected model was trained on one of them)."""
    last = final_step(run)
    return [space_path(run, last, space) for space in config["runs"][run]["steps"][last - 1]["spaces"]]
