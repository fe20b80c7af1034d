# One evaluator for every model: STS (and SentEval) per (encoder, pooling); STS-B dev (the selection score) per
# encoder; the run's tables and PST steps report.


rule score:
    input:
        **INPUTS.of_encoder(),
        senteval=dag.data_dir("senteval"),
    output:
        dag.score_file("{encoder}", "{benchmark}", "{pooling}"),
    params:
        benchmark=lambda w: w.benchmark,
        pooling=lambda w: w.pooling,
        batch_size=config["evaluation"]["batch_size"],
        max_length=config["evaluation"]["max_length"],
        sts_aggregation=lambda w: config["evaluation"]["sts_aggregation"] if w.benchmark == "sts" else "all",
    wildcard_constraints:
        pooling=alternatives(POOLINGS),
    log:
        dag.log_file("eval", "{encoder}", "{benchmark}_{pooling}"),
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=120,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/score.py"


# STS-B dev with the selection's own options (selection:), so evaluation options never re-run a selection.
use rule score as dev_score with:
    output:
        dag.dev_file("{encoder}"),
    params:
        benchmark="dev",
        pooling=config["selection"]["pooling"],
        batch_size=config["selection"]["batch_size"],
        max_length=config["selection"]["max_length"],
        sts_aggregation="all",  # STS-B dev is one dataset: the three aggregations agree
    log:
        dag.log_file("eval", "{encoder}", "dev"),
    resources:
        gpu=GPU,
        mem_mb=4000,
        runtime=30,


rule sts_table:
    input:
        **INPUTS.score_table(PLAN.evaluated, "sts"),
    output:
        tsv=report(dag.run_file("{run}", "sts.tsv"), caption="../report/sts.rst", category="STS"),
        md=dag.run_file("{run}", "sts.md"),
        png=report(dag.run_file("{run}", "sts_by_step.png"), caption="../report/sts_plot.rst", category="STS"),
    params:
        rows=canonical_of(lambda w: PLAN.score_rows(PLAN.evaluated(w.run), "sts")),
        title=lambda w: f"STS (Spearman x 100 of cosine, STS12-16 '{config['evaluation']['sts_aggregation']}'), run {w.run}",
    log:
        dag.log_file("{run}", "eval", "sts_table"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/score_tables.py"


rule senteval_table:
    input:
        **INPUTS.score_table(PLAN.senteval_models, "senteval"),
    output:
        tsv=report(dag.run_file("{run}", "senteval.tsv"), caption="../report/senteval.rst", category="SentEval"),
        md=dag.run_file("{run}", "senteval.md"),
    params:
        rows=canonical_of(lambda w: PLAN.score_rows(PLAN.senteval_models(w.run), "senteval")),
        title=lambda w: f"SentEval transfer accuracy (%), run {w.run}",
    log:
        dag.log_file("{run}", "eval", "senteval_table"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/score_tables.py"


rule steps_report:
    input:
        **INPUTS.steps_report(),
    output:
        tsv=report(dag.run_file("{run}", "steps.tsv"), caption="../report/steps.rst", category="PST steps"),
        png=report(dag.run_file("{run}", "steps.png"), caption="../report/steps_plot.rst", category="PST steps"),
    params:
        steps=canonical_of(lambda w: PLAN.step_records(w.run)),
        title=lambda w: f"PST steps of run {w.run}",
    log:
        dag.log_file("{run}", "eval", "steps_report"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/steps_report.py"
