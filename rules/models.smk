# Every configured model is pinned once under resources/models/<name>: the rule's only param is the model's
# identity (package + version, hub id + revision, or the content checksum of a local directory), so re-installing
# or moving the model re-runs nothing, and another version, path or revision re-runs everything downstream.


rule pin_model:
    output:
        directory(dag.pinned_model("{model}")),
    log:
        dag.log_file("models", "{model}"),
    benchmark:
        dag.benchmark_file("models", "{model}")
    wildcard_constraints:
        model=alternatives(tuple(config["models"])),
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        identity=canonical_of(lambda w: model_identity(config["models"][w.model], where=f"config: models.{w.model}")),
    script:
        "../workflow/scripts/pin_model.py"
