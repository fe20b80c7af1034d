# Input functions and config helpers: the only place that turns config into paths.
import os
import re
from pathlib import Path

from snakemake.utils import validate

from defsent_plus.io import read_json
from defsent_plus.models import resolve_model

validate(config, "../workflow/schemas/config.schema.yaml")


wildcard_constraints:
    run=r"[A-Za-z0-9_-]+",
    encoder=r"[A-Za-z0-9_.-]+",
    dataset=r"[A-Za-z0-9_-]+",
    base="ac|amp",
    transform="center|whiten|ica",
    space=r"(ac|amp)(\.(center|whiten|ica))?",
    step=r"\d+",
    seed=r"\d+",


GPU = config["resources"]["gpu"]
THREADS = config["resources"]["threads"]
SPACE_DIR = "results/entry_spaces/{encoder}/{dataset}"


def senteval_dir():
    """SentEval data: $DEFSENT_SENTEVAL, else config senteval_dir."""
    return os.environ.get("DEFSENT_SENTEVAL", config["senteval_dir"])


def model_path(name):
    """The local directory (or hub id) of a configured model."""
    return resolve_model(config["models"][name])


def model_input(name):
    """A configured model as a Snakemake input: its directory when local, nothing for hub ids."""
    path = model_path(name)
    return [path] if Path(path).exists() else []


def located_model(inputs, encoder):
    """The encoder's path as staged for the job (its input), or its hub id when it has no local files."""
    if isinstance(inputs, str):
        return inputs
    return str(inputs[0]) if len(inputs) else encoder_dir(encoder)


def run_cfg(wildcards):
    return config["runs"][wildcards.run]


def step_cfg(wildcards):
    return run_cfg(wildcards)["steps"][int(wildcards.step) - 1]


def dataset_path(name):
    """Parquet of dataset a, b, c or of a configured subset."""
    if name in config.get("subsets", {}):
        return f"results/dictionary/subsets/{name}.parquet"
    return f"results/dictionary/{name}.parquet"


def encoder_of_step(run, step):
    """Who builds step k's entry space: the base model at step 1, step k-1's best encoder after."""
    return config["runs"][run]["model"] if int(step) == 1 else f"{run}.step{int(step) - 1}"


TRAINED = re.compile(r"^(?P<run>[A-Za-z0-9_-]+)\.step(?P<step>\d+)(\.(?P<space>[a-z.]+)\.seed(?P<seed>\d+))?$")


def encoder_dir(encoder):
    """Directory of an encoder name used in result paths: a configured model, ``<run>.step<k>`` (that
    step's best) or ``<run>.step<k>.<space>.seed<s>`` (one trained candidate)."""
    if encoder in config["models"]:
        return model_path(encoder)
    match = TRAINED.match(encoder)
    if match is None:
        raise ValueError(f"unknown encoder {encoder!r}: not a model in config nor <run>.step<k>[.<space>.seed<s>]")
    run, step, space, seed = match.group("run", "step", "space", "seed")
    if space is None:
        return selected_model(run, step)
    return candidate_model(run, step, space, seed)


def after_selection(run, step):
    """No files; while step ``step``'s select_best checkpoint has yet to (re-)run, asking it makes the job wait
    and be planned afresh once the selection is known. Every job computed from a selection declares this: a
    job Snakemake planned only indirectly keeps its first-pass "input updated" reason even when the same
    candidate is selected again, and would re-run (e.g. every seed of later steps after adding one seed)."""
    if int(step) >= 1:
        checkpoints.select_best.get(run=run, step=str(step))
    return []


def after_selection_of(encoder):
    """after_selection for jobs of an encoder: ``<run>.step<k>`` is step k's selection, a candidate
    ``<run>.step<k>.<space>.seed<s>`` was trained on step k-1's; a configured model depends on none."""
    match = TRAINED.match(encoder)
    if encoder in config["models"] or match is None:
        return []
    step = int(match.group("step"))
    return after_selection(match.group("run"), step if match.group("space") is None else step - 1)


def candidate_model(run, step, space, seed):
    return f"results/{run}/step{step}/{space}/seed{seed}/model"


def selected_model(run, step):
    """Step k's dev-selected candidate, read from the select_best checkpoint. Later steps and evaluation take
    this directory (not the best/ copy), so re-selecting the same candidate re-runs nothing downstream."""
    best = read_json(checkpoints.select_best.get(run=run, step=str(step)).output.best)["best"]
    return candidate_model(run, step, best["space"], best["seed"])


def encoder_step(encoder):
    """The PST step an encoder name belongs to (0 for a configured base model)."""
    match = TRAINED.match(encoder)
    return int(match.group("step")) if match and encoder not in config["models"] else 0


def encoder_input(wildcards):
    if wildcards.encoder in config["models"]:
        return model_input(wildcards.encoder)
    return encoder_dir(wildcards.encoder)


def space_path(run, step, space):
    cfg = config["runs"][run]
    return f"results/entry_spaces/{encoder_of_step(run, step)}/{cfg['dataset']}/{space}.npy"


def step_candidates(run, step):
    """(space, seed) pairs trained at a step, in config order."""
    cfg = config["runs"][run]
    return [(space, seed) for space in cfg["steps"][int(step) - 1]["spaces"] for seed in cfg["seeds"]]


def candidate_files(wildcards, name):
    return [
        f"results/{wildcards.run}/step{wildcards.step}/{space}/seed{seed}/{name}"
        for space, seed in step_candidates(wildcards.run, wildcards.step)
    ]


def scoring_option(benchmark, key):
    """batch_size / max_length of a score job: STS-B dev scoring belongs to selection, the rest to evaluation."""
    return config["selection" if benchmark == "dev" else "evaluation"][key]


def final_step(run):
    return len(config["runs"][run]["steps"])


def evaluated_encoders(run):
    """(encoder name, label, seed group) evaluated on STS: the base model, the final step's candidates (every
    (space, seed), mean ± std over seeds, the dev-selected one marked; or with evaluation.final: best, only the
    dev-selected model) and, with evaluation.steps: all, each earlier step's best."""
    cfg, last = config["runs"][run], final_step(run)
    earlier = range(1, last) if config["evaluation"]["steps"] == "all" else []
    rows = [(cfg["model"], f"base ({cfg['model']})", "")]
    rows += [(f"{run}.step{k}", f"step {k} best", "") for k in earlier]
    if config["evaluation"]["final"] == "best":
        return rows + [(f"{run}.step{last}", f"step {last} best", "")]
    rows += [(f"{run}.step{last}.{space}.seed{seed}", f"step {last} {space} seed {seed}", f"step {last} {space}")
             for space, seed in step_candidates(run, last)]
    return rows


def senteval_encoders(run):
    """SentEval transfer is slower: the base model and the final step's dev-selected model only."""
    cfg = config["runs"][run]
    return [(cfg["model"], f"base ({cfg['model']})", ""), (f"{run}.step{final_step(run)}", "final best", "")]


def score_files(run, benchmark, encoders):
    return [f"results/eval/{encoder}/{benchmark}_{pooling}.json"
            for encoder, _, _ in encoders for pooling in config["evaluation"]["poolings"]]


def score_labels(encoders, column):
    return [row[column] for row in encoders for _ in config["evaluation"]["poolings"]]


def isotropy_targets(run):
    cfg = config["runs"][run]
    return [
        f"results/entry_spaces/{encoder_of_step(run, step)}/{cfg['dataset']}/isotropy.json"
        for step in range(1, len(cfg["steps"]) + 1)
    ]


def all_targets():
    targets = ["results/dictionary/stats.tsv"]
    for run, cfg in config["runs"].items():
        targets.append(f"results/{run}/step{len(cfg['steps'])}/best.json")
        targets += isotropy_targets(run)
        targets += [f"results/{run}/eval/sts.tsv", f"results/{run}/eval/steps.tsv"]
    return targets
