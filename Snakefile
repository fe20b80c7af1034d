# defsent-plus: DefSent+ (dictionary definitions projected into a frozen entry space) as a Snakemake workflow.
# The rule files follow Figure 1 of the paper: dictionary -> entry space -> training -> best -> next step.

# config.yaml is the default; a --configfile given on the command line replaces it (no merging of runs).
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/heldout.smk"
include: "rules/dictionary.smk"
include: "rules/entry_space.smk"
include: "rules/training.smk"
include: "rules/evaluation.smk"
include: "rules/reverse_dictionary.smk"


rule all:
    input:
        all_targets(),
        reverse_dictionary_targets(),
    default_target: True
