# Config validation and the bridge to defsent_plus.pipeline (dag: identities and paths; plan; rule_inputs; params).
from pathlib import Path

from defsent_plus.pipeline import dag, snakemake_api
from defsent_plus.banner import banner_text
from defsent_plus.acquisition.catalog import CATALOG
from defsent_plus.acquisition.catalog import identity as acquisition_identity
from defsent_plus.acquisition.catalog import resolve as resolve_acquisition
from defsent_plus.baselines.spec import extraction_options, scoring_options
from defsent_plus.pipeline.config_schema import validated_config
from defsent_plus.pipeline.plan import Plan
from defsent_plus.io import read_json
from defsent_plus.pipeline.model_store import model_identity
from defsent_plus.names import BASE_SPACES, POOLINGS, TARGET_PATTERN, TORCH_TRANSFORMS, TRANSFORMS, alternatives
from defsent_plus.names import split_space
from defsent_plus.pipeline.dag import canonical, canonical_of, digest
from defsent_plus.pipeline.job_model import JOB_KINDS, gpu_capable_rules, requests_below_projection, rule_request
from defsent_plus.pipeline.placement import placement, written_resources
from defsent_plus.pipeline.requests import threads_per_job
from defsent_plus.pipeline.rule_inputs import RuleInputs
from defsent_plus.training.trackers import check_trackers

# The workflow's own folder (this file's parent's), also when another workflow uses it as a module
WORKFLOW_ROOT = Path(str(workflow.current_basedir)).parent
snakemake_api.declare_prefix(snakemake_api.module_prefix(workflow))  # a module's prefix, for its jobs
validated_config(config, WORKFLOW_ROOT / "workflow" / "schemas" / "config.schema.yaml")
check_trackers(config["logging"]["report_to"])  # a tracker that is not installed stops here, before any job
# This config's results folder (config results_dir, else named after its config file: dag.results_dir_of) and its logs
# and benchmarks beside it: planning, not a parameter of any job (a config's results move, nothing re-runs).
RESULTS_DIR = dag.results_dir_of(config.get("results_dir"), workflow.overwrite_configfiles, Path.cwd(), WORKFLOW_ROOT)
FOLDERS = dag.use_results_dir(RESULTS_DIR)
config["results_dir"] = FOLDERS.results
dag.place_folder_settings(config)  # resume.area, logging.dir: "{results}/…", "{logs}/…" in this config's folders


wildcard_constraints:
    **dag.WILDCARDS,


def read_selection(run, step):
    """A step's dev-selected candidate, from the select_best checkpoint (a job asking waits for it)."""
    return read_json(checkpoints.select_best.get(run=run, step=str(step)).output.best)["best"]


PLAN = Plan(config, read_selection)
# A rehearsal (config rehearsal:, defsent_plus/rehearsal) marks every table and plot as made of random weights and
# caps each candidate's examples. Both are params only in a rehearsal, so a real run's params, and with them its
# re-runs, are what they were before rehearsals existed.
REHEARSAL = config.get("rehearsal") or {}
BANNER = {"banner": banner_text(REHEARSAL)} if REHEARSAL else {}
REHEARSAL_EXAMPLES = {"max_examples": REHEARSAL["caps"]["training_examples"]} if REHEARSAL else {}
GPU = config["resources"]["gpu"]
# selection.keep_weights: selected makes a candidate's weights temporary: deleted once the jobs of this invocation
# that read them (its dev score, the copy of the selected one, candidate evaluations) are done, and retrained only if
# a job that must run needs them again.
CANDIDATE_WEIGHTS = temp if PLAN.keeps_selected_weights_only else (lambda path: path)
# What a job asks its scheduler for: its projected work (defsent_plus/pipeline/job_model.py, projected_request below),
# on a GPU when the profile or config gives its rule one; a retry (a job killed at its time limit) asks attempt x that.
OVERRIDES = snakemake_api.resource_overrides(workflow)  # rule -> its --set-resources, as values


def on_gpu(rule):
    """Whether ``rule``'s jobs get a GPU: the profile's or --set-resources' gpu for it, else config resources.gpu."""
    return int(OVERRIDES.get(rule, {}).get("gpu", GPU) or 0) > 0


# A user's runtime or mem_mb below a job's projection (the job model's rules, train and those asking
# projected_request) is flagged now, before anything is submitted: such a job would die at its limit.
for problem in requests_below_projection(config, PLAN, OVERRIDES, on_gpu):
    logger.warning(f"Request too small: {problem}")

# Where a SLURM profile sends each rule (partition, account, GPU type), said before anything is submitted, with a
# warning when the jobs that ask for a GPU do not all go to the same place (defsent_plus/pipeline/placement.py).
SLURM_PLACEMENT = placement(
    list(JOB_KINDS),
    {rule for rule in gpu_capable_rules() if on_gpu(rule)},
    *written_resources(snakemake_api.set_resources(workflow), snakemake_api.default_resources(workflow)),
)
if workflow.is_main_process:  # at warning level: Snakemake shows no info while it reads the workflow
    for line in SLURM_PLACEMENT[0] + SLURM_PLACEMENT[1]:
        logger.warning(line)


def projected_request(rule, key):
    """A job's ``key`` (runtime or mem_mb) from its work in this config (defsent_plus/pipeline/job_model.py
    rule_request, with costs.margin); a retry (killed at its limit) asks for attempt x that."""
    gpu = on_gpu(rule)
    return lambda w, attempt: getattr(rule_request(config, PLAN, rule, dict(w.items()), gpu), key) * attempt


THREADS = threads_per_job(config["resources"]["threads"], snakemake_api.cores(workflow))
# The training chain (subsets, entry spaces and their transforms, training, the STS-B dev embeddings and the selection)
# is the DAG's longest path: its jobs start first, and the evaluations fill the other cores beside it. The baselines'
# path (fit corpus, forward pass, grid: minutes, independent of the chain) shares the priority, so it runs beside the
# chain rather than alone at the end. Within the chain, the steps that only the chain needs go first: its entry
# spaces, transforms and training rank above the embeddings and baselines, and above those rank the seconds-long jobs
# that open the chain's next step (subsets, dev scores, the selection and its copy), which Snakemake would otherwise
# start after STS encodings (among equal priorities it prefers large inputs). The default DAG's wall time with this
# order: docs/results.md, "Budgets".
CHAIN_PRIORITY = 10
STEP_PRIORITY = CHAIN_PRIORITY + 1
GATE_PRIORITY = CHAIN_PRIORITY + 2
ANALYSED = config["entry_space"]["analyse"]  # spaces whose isotropy is measured and plotted
TRANSFORMED = [space for space in ANALYSED if split_space(space)[1]]  # ... of them, those made by a transform


# Acquired data, by dataset name: its settings from config data.<name>, its mirror variable applied.
DATA = {name: resolve_acquisition(name, config["data"], WORKFLOW_ROOT) for name in CATALOG}


def run_cfg(wildcards):
    return config["runs"][wildcards.run]


# Every rule's inputs: named input functions from defsent_plus.pipeline.rule_inputs (with the selection wait built in).
INPUTS = RuleInputs(PLAN)


# The options of scoring a baseline grid (a forward pass never re-runs for them; its own: extraction_options).
BASELINE_SCORING = scoring_options(config)


def mteb_revision(wildcards):
    """MTEB's revision of a model: a digest of its root model's pinned identity and its run chain's config."""
    source = PLAN.revision_source(dag.EncoderId.parse(wildcards.encoder))
    identity = model_identity(config["models"][source["model"]], where=f"config: models.{source['model']}")
    return digest({**source, "identity": identity})
