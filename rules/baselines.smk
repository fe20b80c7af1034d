# Training-free sentence embeddings (003) of the encoders named in baselines.encoders: one forward pass per (encoder,
# template) cached per layer set, then every combination of the encoder's grid scored from the cache (post-processing
# and metrics only, so a new post-processor re-runs only baseline_grid).


rule baseline_fit_corpus:
    input:
        **PLAN.fit_corpus_inputs(),
    output:
        dag.fit_corpus_file(),
    log:
        dag.log_file("baselines", "fit_corpus"),
    benchmark:
        dag.benchmark_file("baselines", "fit_corpus")
    priority: CHAIN_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        options=canonical(config["baselines"]["fit_corpus"]),
    script:
        "../workflow/scripts/baseline_fit_corpus.py"


rule baseline_embed:
    input:
        **INPUTS.of_encoder(corpus=dag.fit_corpus_file()),
        senteval=dag.data_dir("senteval"),
    output:
        directory(dag.baseline_cache("{encoder}", "{template}")),
    log:
        dag.log_file("baselines", "{encoder}", "embed_{template}"),
    benchmark:
        dag.benchmark_file("baselines", "{encoder}", "embed_{template}")
    priority: CHAIN_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=projected_request("baseline_embed", "mem_mb"),
        runtime=projected_request("baseline_embed", "runtime"),
    params:
        request=canonical_of(lambda w: PLAN.baseline_request(w.encoder, w.template)),
        options=canonical_of(lambda w: extraction_options(config, PLAN.baseline_request(w.encoder, w.template))),
        grid_key=lambda w: PLAN.baseline_grid_key(w.encoder),
    script:
        "../workflow/scripts/baseline_embed.py"


rule baseline_grid:
    input:
        caches=lambda w: list(PLAN.baseline_caches(w.encoder).values()),
        corpus=dag.fit_corpus_file(),
        senteval=dag.data_dir("senteval"),
    output:
        tsv=report(
            dag.baselines_file("{encoder}", "scores.tsv"), caption="../report/baselines.rst", category="Baselines"
        ),
        md=dag.baselines_file("{encoder}", "summary.md"),
        png=report(
            dag.baselines_file("{encoder}", "layers.png"),
            caption="../report/baselines_layers.rst",
            category="Baselines",
        ),
    log:
        dag.log_file("baselines", "{encoder}", "grid"),
    benchmark:
        dag.benchmark_file("baselines", "{encoder}", "grid")
    priority: CHAIN_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: THREADS
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        caches=canonical_of(lambda w: PLAN.baseline_caches(w.encoder)),
        grid=canonical_of(lambda w: PLAN.baseline_grid(w.encoder)),
        grid_key=lambda w: PLAN.baseline_grid_key(w.encoder),
        templates=canonical_of(lambda w: PLAN.baseline_templates(w.encoder)),
        options=canonical(BASELINE_SCORING),
        title=lambda w: f"Training-free sentence embeddings of {w.encoder} (the extraction study's baselines)",
    script:
        "../workflow/scripts/baseline_grid.py"
