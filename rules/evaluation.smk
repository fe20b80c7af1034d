# One evaluator for every model, from the stored embeddings (rules/embeddings.smk): STS and SentEval per (encoder,
# pooling), STS-B dev (the selection score) per encoder; the run's tables and PST steps report.


rule score:
    input:
        **INPUTS.of_encoder(
            model=False,
            embeddings=dag.embedding_file("{encoder}", "sts", "{pooling}"),
            record=dag.embedding_file("{encoder}", "sts", "{pooling}", "json"),
        ),
        senteval=dag.data_dir("senteval"),
    output:
        json=dag.score_file("{encoder}", "sts", "{pooling}"),
        pairs=dag.score_file("{encoder}", "sts", "{pooling}", "pairs.parquet"),
    params:
        benchmark="sts",
        sts_aggregation=config["evaluation"]["sts_aggregation"],
    wildcard_constraints:
        pooling=alternatives(POOLINGS),
    log:
        dag.log_file("eval", "{encoder}", "sts_{pooling}"),
    benchmark:
        dag.benchmark_file("eval", "{encoder}", "sts_{pooling}"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/score.py"


use rule score as senteval with:
    input:
        **INPUTS.of_encoder(
            model=False,
            embeddings=dag.embedding_file("{encoder}", "senteval", "{pooling}"),
            record=dag.embedding_file("{encoder}", "senteval", "{pooling}", "json"),
        ),
        senteval=dag.data_dir("senteval"),
    output:
        json=dag.score_file("{encoder}", "senteval", "{pooling}"),
    params:
        benchmark="senteval",
        sts_aggregation="all",
        bootstrap=canonical(config["evaluation"]["bootstrap"]),
        protocol=config["evaluation"]["senteval_protocol"],
    log:
        dag.log_file("eval", "{encoder}", "senteval_{pooling}"),
    benchmark:
        dag.benchmark_file("eval", "{encoder}", "senteval_{pooling}"),
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=SENTEVAL_RUNTIME_MINUTES[config["evaluation"]["senteval_protocol"]],


# STS-B dev with the selection's pooling (selection:), so evaluation options never re-run a selection.
use rule score as dev_score with:
    input:
        **INPUTS.of_encoder(
            model=False,
            embeddings=dag.embedding_file("{encoder}", "stsb-dev", config["selection"]["pooling"]),
            record=dag.embedding_file("{encoder}", "stsb-dev", config["selection"]["pooling"], "json"),
        ),
        senteval=dag.data_dir("senteval"),
    output:
        json=dag.dev_file("{encoder}"),
        pairs=dag.dev_file("{encoder}", "pairs.parquet"),
    params:
        benchmark="dev",
        sts_aggregation="all",  # STS-B dev is one dataset: the three aggregations agree
    log:
        dag.log_file("eval", "{encoder}", "dev"),
    benchmark:
        dag.benchmark_file("eval", "{encoder}", "dev"),
    priority: CHAIN_PRIORITY


# MTEB's STS tasks on the stored STS vectors of one (encoder, pooling), beside this project's scores of the same pairs
# (evaluation.mteb; docs/evaluation.md). More MTEB tasks (evaluation.mteb.tasks, online) encode with the model, whose
# parameter count MTEB's metadata records.
rule mteb:
    input:
        **INPUTS.of_encoder(
            embeddings=dag.embedding_file("{encoder}", "sts", "{pooling}"),
            record=dag.embedding_file("{encoder}", "sts", "{pooling}", "json"),
            pairs=dag.score_file("{encoder}", "sts", "{pooling}", "pairs.parquet"),
        ),
        senteval=dag.data_dir("senteval"),
    output:
        results=directory(dag.mteb_dir("{encoder}", "{pooling}")),
        check=dag.mteb_check("{encoder}", "{pooling}"),
    params:
        revision=mteb_revision,
        tasks=config["evaluation"]["mteb"]["tasks"],
        batch_size=config["evaluation"]["batch_size"],
        max_length=config["evaluation"]["max_length"],
    wildcard_constraints:
        pooling=alternatives(POOLINGS),
    log:
        dag.log_file("eval", "{encoder}", "mteb_{pooling}"),
    benchmark:
        dag.benchmark_file("eval", "{encoder}", "mteb_{pooling}"),
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/mteb_sts.py"


rule sts_table:
    input:
        **INPUTS.score_table(PLAN.evaluated, "sts"),
    output:
        tsv=report(dag.run_file("{run}", "sts.tsv"), caption="../report/sts.rst", category="STS"),
        md=dag.run_file("{run}", "sts.md"),
        png=report(dag.run_file("{run}", "sts_by_step.png"), caption="../report/sts_plot.rst", category="STS"),
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        rows=canonical_of(lambda w: PLAN.score_rows(PLAN.evaluated(w.run), "sts")),
        title=lambda w: PLAN.table_title(
            w.run, f"STS (Spearman x 100 of cosine, STS12-16 '{config['evaluation']['sts_aggregation']}'), run {w.run}"
        ),
        bootstrap=canonical(config["evaluation"]["bootstrap"]),
    log:
        dag.log_file("{run}", "eval", "sts_table"),
    benchmark:
        dag.benchmark_file("{run}", "eval", "sts_table"),
    localrule: True
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
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        rows=canonical_of(lambda w: PLAN.score_rows(PLAN.senteval_models(w.run), "senteval")),
        title=lambda w: PLAN.table_title(
            w.run, f"SentEval transfer accuracy (%), run {w.run}, {config['evaluation']['senteval_protocol']} protocol"
        ),
        bootstrap=None,
    log:
        dag.log_file("{run}", "eval", "senteval_table"),
    benchmark:
        dag.benchmark_file("{run}", "eval", "senteval_table"),
    localrule: True
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
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        steps=canonical_of(lambda w: PLAN.step_records(w.run)),
        title=lambda w: f"PST steps of run {w.run}",
    log:
        dag.log_file("{run}", "eval", "steps_report"),
    benchmark:
        dag.benchmark_file("{run}", "eval", "steps_report"),
    localrule: True
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/steps_report.py"
