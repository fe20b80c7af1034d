# Every evaluator is a declaration (defsent_plus/evaluation/evaluators: the registry is the only list of benchmarks), scored from
# the stored embeddings (rules/embeddings.smk): one job per (encoder, evaluator, pooling), STS-B dev (the selection
# score) per encoder; the run's table of each evaluator in evaluation.tables, MTEB's cross-check and the PST steps
# report. A new evaluator is one module and one registry line; these rules ask its declaration.
from defsent_plus.evaluation.evaluators import evaluator_of, scored, tabled
from defsent_plus.evaluation.evaluators import of_job as evaluator

PAIRED = [name for name, e in scored().items() if e.paired]  # their jobs also write per-pair similarities
UNPAIRED = [name for name, e in scored().items() if not e.paired]


rule score:
    input:
        **INPUTS.of_encoder(model=False),
        embeddings=lambda w: dag.embedding_file(w.encoder, evaluator(w).sentence_set, w.pooling),
        record=lambda w: dag.embedding_file(w.encoder, evaluator(w).sentence_set, w.pooling, "json"),
        senteval=dag.data_dir("senteval"),
    output:
        json=dag.score_file("{encoder}", "{evaluator}", "{pooling}"),
        pairs=dag.score_file("{encoder}", "{evaluator}", "{pooling}", "pairs.parquet"),
    log:
        dag.log_file("eval", "{encoder}", "{evaluator}_{pooling}"),
        work=dag.work_clock_file("eval", "{encoder}", "{evaluator}_{pooling}"),
    benchmark:
        dag.benchmark_file("eval", "{encoder}", "{evaluator}_{pooling}")
    wildcard_constraints:
        pooling=alternatives(POOLINGS),
        evaluator=alternatives(PAIRED),
    conda:
        "../envs/defsent.yaml"
    threads: lambda w: THREADS if evaluator(w).threads == "job" else 1
    resources:
        mem_mb=lambda w: evaluator(w).mem_mb,
        runtime=lambda w: evaluator(w).runtime(evaluator(w).options(config)),
    params:
        evaluator=lambda w: w.evaluator,
        options=canonical_of(lambda w: evaluator(w).options(config)),
    script:
        "../workflow/scripts/score.py"


use rule score as score_unpaired with:
    output:
        json=dag.score_file("{encoder}", "{evaluator}", "{pooling}"),
    wildcard_constraints:
        pooling=alternatives(POOLINGS),
        evaluator=alternatives(UNPAIRED),


# STS-B dev with the selection's pooling and encoding (selection:), so evaluation options never re-run a selection.
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
    log:
        dag.log_file("eval", "{encoder}", "dev"),
        work=dag.work_clock_file("eval", "{encoder}", "dev"),
    benchmark:
        dag.benchmark_file("eval", "{encoder}", "dev")
    priority: GATE_PRIORITY
    localrule: True
    threads: 1
    resources:
        mem_mb=evaluator_of("dev").mem_mb,
        runtime=evaluator_of("dev").runtime(evaluator_of("dev").options(config)),
    params:
        evaluator="dev",
        options=canonical(evaluator_of("dev").options(config)),


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
    log:
        dag.log_file("eval", "{encoder}", "mteb_{pooling}"),
    benchmark:
        dag.benchmark_file("eval", "{encoder}", "mteb_{pooling}")
    wildcard_constraints:
        pooling=alternatives(POOLINGS),
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        revision=mteb_revision,
        tasks=config["evaluation"]["mteb"]["tasks"],
        batch_size=config["evaluation"]["batch_size"],
        max_length=config["evaluation"]["max_length"],
    script:
        "../workflow/scripts/mteb_sts.py"


# A run's table of one evaluator (evaluation.tables builds them in rule all; any tabled evaluator on request):
# TSV and markdown in the paper's layout, the average per PST step as a plot.
rule score_table:
    input:
        **INPUTS.score_table(),
    output:
        tsv=report(
            dag.run_file("{run}", "{evaluator}.tsv"),
            caption="../report/score_table.rst",
            category=lambda w: evaluator(w).table.category,
        ),
        md=dag.run_file("{run}", "{evaluator}.md"),
        png=report(
            dag.run_file("{run}", "{evaluator}_by_step.png"),
            caption="../report/score_plot.rst",
            category=lambda w: evaluator(w).table.category,
        ),
    log:
        dag.log_file("{run}", "eval", "{evaluator}_table"),
        work=dag.work_clock_file("{run}", "eval", "{evaluator}_table"),
    benchmark:
        dag.benchmark_file("{run}", "eval", "{evaluator}_table")
    wildcard_constraints:
        evaluator=alternatives(list(tabled())),
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        rows=canonical_of(lambda w: PLAN.score_rows(PLAN.table_models(w.run, w.evaluator), w.evaluator)),
        title=lambda w: PLAN.table_title(w.run, f"{evaluator(w).table.title(config)}, run {w.run}"),
        caption=lambda w: evaluator(w).table.caption,
        columns=lambda w: evaluator(w).table.columns,
        axis=lambda w: evaluator(w).table.axis,
        bootstrap=lambda w: canonical(config["evaluation"]["bootstrap"]) if evaluator(w).paired else None,
    script:
        "../workflow/scripts/score_tables.py"


rule steps_report:
    input:
        **INPUTS.steps_report(),
    output:
        tsv=report(dag.run_file("{run}", "steps.tsv"), caption="../report/steps.rst", category="PST steps"),
        png=report(dag.run_file("{run}", "steps.png"), caption="../report/steps_plot.rst", category="PST steps"),
        curves=report(dag.run_file("{run}", "curves.png"), caption="../report/curves.rst", category="PST steps"),
    log:
        dag.log_file("{run}", "eval", "steps_report"),
    benchmark:
        dag.benchmark_file("{run}", "eval", "steps_report")
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        steps=canonical_of(lambda w: PLAN.step_records(w.run)),
        title=lambda w: f"PST steps of run {w.run}",
    script:
        "../workflow/scripts/steps_report.py"
