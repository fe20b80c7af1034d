# defsent-plus: DefSent+ (dictionary definitions projected into a frozen entry space) as a Snakemake workflow.
# The rule files follow Figure 1 of the paper: dictionary -> entry space -> training -> best -> next step.
# Every identity, path and input of the DAG comes from defsent_plus/pipeline/ (through rules/common.smk).

# config.yaml is the default; a --configfile given on the command line replaces it (no merging of runs).
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# Rules marked `localrule: True` (data and model downloads, dev scores, the selection, the tables, the summary) run where
# Snakemake itself runs, on a cluster its login node: they need the network, which compute nodes often lack, or
# take seconds, less than a queue wait.
include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/dictionary.smk"
include: "rules/entry_space.smk"
include: "rules/training.smk"
include: "rules/embeddings.smk"
include: "rules/evaluation.smk"
include: "rules/reverse_dictionary.smk"
include: "rules/comparison.smk"
include: "rules/baselines.smk"


# The HTML report (snakemake --report report.html) opens on the comparison: rule summary writes this page.
report: str(Path(dag.compare_file("summary.rst")).resolve())


rule all:
    default_target: True
    input:
        PLAN.targets(),
