# Config validation and the bridge to defsent_plus.dag, which holds every identity, path and input of the DAG.
import os

from snakemake.utils import validate

from defsent_plus import dag
from defsent_plus.dag import EncoderId, Plan
from defsent_plus.io import read_json
from defsent_plus.model_store import model_identity
from defsent_plus.names import BASE_SPACES, POOLINGS, TRANSFORMS, alternatives

validate(config, "../workflow/schemas/config.schema.yaml")


wildcard_constraints:
    **dag.WILDCARDS,


def read_selection(run, step):
    """A step's dev-selected candidate, from the select_best checkpoint (a job asking waits for it)."""
    return read_json(checkpoints.select_best.get(run=run, step=str(step)).output.best)["best"]


PLAN = Plan(config, read_selection)
GPU = config["resources"]["gpu"]
THREADS = config["resources"]["threads"]
SPACE_DIR = dag.space_dir("{encoder}", "{dataset}")
ANALYSED = config["entry_space"]["analyse"]  # spaces whose isotropy is measured and plotted


def senteval_dir():
    """SentEval data: $DEFSENT_SENTEVAL, else config senteval_dir."""
    return os.environ.get("DEFSENT_SENTEVAL", config["senteval_dir"])


def encoder(wildcards):
    return EncoderId.parse(wildcards.encoder)


def candidate(wildcards):
    return EncoderId.candidate(wildcards.run, wildcards.step, wildcards.space, wildcards.seed)


def run_cfg(wildcards):
    return config["runs"][wildcards.run]


# Input functions: each goes through PLAN.inputs, which also waits for the selections a job comes from.


def encoder_inputs(wildcards):
    """The encoder of an {encoder} job (its model directory)."""
    return PLAN.inputs(encoder(wildcards))


def encoder_files(**patterns):
    """Input function: named files of an {encoder} job (no model; a pattern may be a list), after the selections
    that encoder comes from."""

    def expand_all(pattern, w):
        return [p.format(**w) for p in pattern] if isinstance(pattern, list) else pattern.format(**w)

    return lambda w: PLAN.inputs(encoder(w), model=False, **{k: expand_all(p, w) for k, p in patterns.items()})


def train_inputs(wildcards):
    return PLAN.train_inputs(candidate(wildcards))


def selection_inputs(wildcards):
    """A step's candidates: their dev scores and models (after the previous step's selection)."""
    candidates = PLAN.candidates(wildcards.run, wildcards.step)
    return PLAN.inputs(candidates[0], model=False, dev=[dag.dev_file(c) for c in candidates],
                       models=[dag.trained_model(c) for c in candidates])
