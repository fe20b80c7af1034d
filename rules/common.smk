# Config validation and the bridge to defsent_plus.dag, which holds every identity, path and input of the DAG.
import os
from pathlib import Path

from defsent_plus import dag
from defsent_plus.config_schema import validated_config
from defsent_plus.dag import EncoderId, Plan
from defsent_plus.io import read_json
from defsent_plus.model_store import model_identity
from defsent_plus.names import BASE_SPACES, POOLINGS, TRANSFORMS, alternatives

validated_config(config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml")


wildcard_constraints:
    **dag.WILDCARDS,


def read_selection(run, step):
    """A step's dev-selected candidate, from the select_best checkpoint (a job asking waits for it)."""
    return read_json(checkpoints.select_best.get(run=run, step=str(step)).output.best)["best"]


PLAN = Plan(config, read_selection)
GPU = config["resources"]["gpu"]
THREADS = config["resources"]["threads"]
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


# Inputs: each rule computed from an encoder takes them from PLAN.input_functions, which adds `selection` (the wait
# for the selections that encoder comes from), one named input function per file.


def files(pattern):
    """An input function: ``pattern`` (or a list of patterns) filled with the job's wildcards."""
    if isinstance(pattern, list):
        return lambda w: [p.format(**w) for p in pattern]
    return lambda w: pattern.format(**w)


def encoder_inputs(model=True, **file_functions):
    """Inputs of an {encoder} job: its model directory (with ``model``), ``file_functions`` and the selection wait."""
    return PLAN.input_functions(encoder, model=model, **file_functions)


def training_inputs():
    """A candidate's training: the run's starting weights, its dataset and its frozen entry space."""
    return PLAN.input_functions(
        candidate,
        model=False,
        **{name: training_file(name) for name in ("base", "dataset", "space")},
    )


def training_file(name):
    return lambda w: PLAN.training_files(candidate(w)).get(name, [])


def selection_inputs():
    """A step's candidates: their dev scores and models (after the previous step's selection)."""
    return PLAN.input_functions(
        lambda w: PLAN.candidates(w.run, w.step)[0],
        model=False,
        dev=lambda w: [dag.dev_file(c) for c in PLAN.candidates(w.run, w.step)],
        models=lambda w: [dag.trained_model(c) for c in PLAN.candidates(w.run, w.step)],
    )


def final_model(wildcards):
    return EncoderId.selected(wildcards.run, PLAN.final_step(wildcards.run))


def reverse_dictionary_inputs():
    """The final dev-selected model with the spaces its step trained on, the held-out queries, and the run's
    starting model with its AMP space (the untrained reference)."""
    return PLAN.input_functions(
        final_model,
        spaces=lambda w: [PLAN.space_of(w.run, PLAN.final_step(w.run), s) for s in run_cfg(w)["steps"][-1]["spaces"]],
        dataset=lambda w: PLAN.run_dataset(w.run),
        queries=lambda w: PLAN.queries_file(run_cfg(w)["dataset"]),
        base=lambda w: PLAN.model_dir(PLAN.start(w.run)),
        base_space=lambda w: PLAN.space_of(w.run, 1, "amp"),
    )


def table_inputs(models_of, benchmark):
    """A run's score table: the score files of ``models_of(run)`` and the final selection."""
    return {
        "scores": lambda w: [row["scores"] for row in PLAN.score_rows(models_of(w.run), benchmark)],
        "best": lambda w: dag.best_json(w.run, PLAN.final_step(w.run)),
    }


def steps_report_inputs():
    """Every step's selection, every candidate's training summary, the starting model's dev score."""
    return {
        "best": lambda w: [record["best"] for record in PLAN.step_records(w.run)],
        "train": lambda w: [path for record in PLAN.step_records(w.run) for path in record["train"]],
        "start_dev": lambda w: PLAN.dev_of(PLAN.start(w.run)),
    }
