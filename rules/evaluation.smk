rule score:
    input:
        model=encoder_input,
        selection=lambda w: after_selection_of(w.encoder),
    output:
        "results/eval/{encoder}/{benchmark}_{pooling}.json",
    params:
        model=lambda w, input: located_model(input.model, w.encoder),
        senteval_dir=senteval_dir(),
        benchmark=lambda w: w.benchmark,
        pooling=lambda w: w.pooling,
        batch_size=lambda w: scoring_option(w.benchmark, "batch_size"),
        max_length=lambda w: scoring_option(w.benchmark, "max_length"),
        label=lambda w: w.encoder,
    wildcard_constraints:
        benchmark="sts|senteval|dev",
        pooling="cls|mean|prompt",
    log:
        "logs/eval/{encoder}/{benchmark}_{pooling}.log",
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=120,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/score.py"


rule sts_table:
    input:
        scores=lambda w: score_files(w.run, "sts", evaluated_encoders(w.run)),
        best=lambda w: f"results/{w.run}/step{final_step(w.run)}/best.json",
    output:
        tsv=report("results/{run}/eval/sts.tsv", caption="../report/sts.rst", category="STS"),
        md="results/{run}/eval/sts.md",
        png=report("results/{run}/eval/sts_by_step.png", caption="../report/sts_plot.rst", category="STS"),
    params:
        labels=lambda w: score_labels(evaluated_encoders(w.run), 1),
        groups=lambda w: score_labels(evaluated_encoders(w.run), 2),
        steps=lambda w: [encoder_step(e) for e in score_labels(evaluated_encoders(w.run), 0)],
        title=lambda w: f"STS (Spearman x 100 of cosine), run {w.run}",
    log:
        "logs/{run}/eval/sts_table.log",
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
        scores=lambda w: score_files(w.run, "senteval", senteval_encoders(w.run)),
        best=lambda w: f"results/{w.run}/step{final_step(w.run)}/best.json",
    output:
        tsv=report("results/{run}/eval/senteval.tsv", caption="../report/senteval.rst", category="SentEval"),
        md="results/{run}/eval/senteval.md",
    params:
        labels=lambda w: score_labels(senteval_encoders(w.run), 1),
        groups=lambda w: score_labels(senteval_encoders(w.run), 2),
        title=lambda w: f"SentEval transfer accuracy (%), run {w.run}",
    log:
        "logs/{run}/eval/senteval_table.log",
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
        best=lambda w: [f"results/{w.run}/step{k}/best.json" for k in range(1, final_step(w.run) + 1)],
        train=lambda w: [
            f"results/{w.run}/step{k}/{space}/seed{seed}/train.json"
            for k in range(1, final_step(w.run) + 1)
            for space, seed in step_candidates(w.run, k)
        ],
        base_dev=lambda w: f"results/eval/{run_cfg(w)['model']}/dev_{config['selection']['pooling']}.json",
    output:
        tsv=report("results/{run}/eval/steps.tsv", caption="../report/steps.rst", category="PST steps"),
        png=report("results/{run}/eval/steps.png", caption="../report/steps_plot.rst", category="PST steps"),
    params:
        steps=lambda w: [len(step_candidates(w.run, k)) for k in range(1, final_step(w.run) + 1)],
        title=lambda w: f"PST steps of run {w.run}",
    log:
        "logs/{run}/eval/steps_report.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/steps_report.py"
