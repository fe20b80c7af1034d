# One job per (run, step, space, seed): the run's method trains the run's STARTING weights (PST restarts every step
# from them) against the entry space built by the previous step's dev-selected encoder; STS-B dev picks each step's best.


rule train:
    input:
        **INPUTS.training(),
    output:
        model=CANDIDATE_WEIGHTS(directory(dag.candidate_file("{run}", "{step}", "{space}", "{seed}", "model"))),
        summary=dag.candidate_file("{run}", "{step}", "{space}", "{seed}", "train.json"),
        metrics=dag.candidate_file("{run}", "{step}", "{space}", "{seed}", "metrics.tsv"),
    log:
        dag.log_file("{run}", "step{step}", "{space}", "seed{seed}", "train"),
        work=dag.work_clock_file("{run}", "step{step}", "{space}", "seed{seed}", "train"),
    benchmark:
        dag.benchmark_file("{run}", "step{step}", "{space}", "seed{seed}", "train")
    wildcard_constraints:
        space=TARGET_PATTERN,
    priority: STEP_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=projected_request("train", "mem_mb"),
        runtime=projected_request("train", "runtime"),
    params:
        **REHEARSAL_EXAMPLES,  # a rehearsal's cap on the examples; none on a real run
        **BANNER,  # a rehearsal's banner on the metrics table; none on a real run
        method=lambda w: PLAN.method(w.run).name,
        options=canonical_of(lambda w: PLAN.method_options(w.run)),
        lr=lambda w: run_cfg(w)["steps"][int(w.step) - 1]["lr"],
        batch_size=lambda w: run_cfg(w)["batch_size"],
        pooling=lambda w: run_cfg(w)["training_pooling"],
    script:
        "../workflow/scripts/train.py"


# A checkpoint: the next step's entry space and the evaluation read the selected candidate from best.json, so
# re-selecting the same candidate (e.g. after adding a seed) re-runs nothing after it.
checkpoint select_best:
    input:
        **INPUTS.selection(),
    output:
        best=dag.best_json("{run}", "{step}"),
    log:
        dag.log_file("{run}", "step{step}", "select_best"),
    benchmark:
        dag.benchmark_file("{run}", "step{step}", "select_best")
    priority: GATE_PRIORITY
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        candidates=canonical_of(
            lambda w: [
                {"space": c.space, "seed": c.seed, "model": dag.trained_model(c)}
                for c in PLAN.candidates(w.run, w.step)
            ]
        ),
    script:
        "../workflow/scripts/select_best.py"


# The selected candidate's copy in best/: for users, and with selection.keep_weights: selected the one copy of a
# step's weights that stays (the candidates' own are temporary; best/ is what later steps and evaluations read).
rule keep_best:
    input:
        **INPUTS.kept_best(),
    output:
        model=directory(dag.best_dir("{run}", "{step}")),
    log:
        dag.log_file("{run}", "step{step}", "keep_best"),
    benchmark:
        dag.benchmark_file("{run}", "step{step}", "keep_best")
    priority: GATE_PRIORITY
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/keep_best.py"


# selection.keep_weights: selected: a step's candidates' weights deleted once what reads them is done (their dev
# scores, the copy of the selected one, the candidates' STS table, their training-free grids). Snakemake's own temp()
# removal waits for the last selection checkpoint of the whole DAG (snakemake#2982); this frees each step's as it ends.
rule prune_candidates:
    input:
        **INPUTS.pruning(),
    output:
        record=dag.pruned_record("{run}", "{step}"),
    log:
        dag.log_file("{run}", "step{step}", "prune_candidates"),
    benchmark:
        dag.benchmark_file("{run}", "step{step}", "prune_candidates")
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        model_dirs=lambda w: [dag.trained_model(c) for c in PLAN.candidates(w.run, w.step)],
    script:
        "../workflow/scripts/prune_candidates.py"
