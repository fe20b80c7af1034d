# 000 Section 3.2: per entry, the mean over its definitions of the encoder's CLS (AC) or mean-pooled (AMP) vector;
# candidate spaces transform a base space (center, whiten, ICA); the isotropy of every analysed space is measured.


rule entry_space:
    input:
        **INPUTS.entry_space(),
    output:
        ac=dag.space_file("{encoder}", "{dataset}", "ac"),
        amp=dag.space_file("{encoder}", "{dataset}", "amp"),
        meta=dag.space_meta("{encoder}", "{dataset}"),
    log:
        dag.log_file("entry_spaces", "{encoder}", "{dataset}", "entry_space"),
        work=dag.work_clock_file("entry_spaces", "{encoder}", "{dataset}", "entry_space"),
    benchmark:
        dag.benchmark_file("entry_spaces", "{encoder}", "{dataset}", "entry_space")
    priority: STEP_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=projected_request("entry_space", "mem_mb"),
        runtime=projected_request("entry_space", "runtime"),
    params:
        batch_size=config["entry_space"]["batch_size"],
        max_length=config["entry_space"]["max_length"],
    script:
        "../workflow/scripts/entry_space.py"


rule transform_space:
    input:
        **INPUTS.of_encoder(model=False, space=dag.space_file("{encoder}", "{dataset}", "{base}")),
    output:
        space=dag.space_file("{encoder}", "{dataset}", "{base}.{transform}"),
        info=dag.space_file("{encoder}", "{dataset}", "{base}.{transform}", "json"),
    log:
        dag.log_file("entry_spaces", "{encoder}", "{dataset}", "{base}.{transform}"),
    benchmark:
        dag.benchmark_file("entry_spaces", "{encoder}", "{dataset}", "{base}.{transform}")
    wildcard_constraints:
        base=alternatives(BASE_SPACES),
        transform=alternatives(TRANSFORMS),
    priority: STEP_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: lambda w: config["entry_space"]["ica"]["threads"] if w.transform == "ica" else 1
    resources:
        gpu=lambda w: GPU if w.transform in TORCH_TRANSFORMS else 0,  # ICA runs on the GPU when there is one
        mem_mb=projected_request("transform_space", "mem_mb"),
        runtime=projected_request("transform_space", "runtime"),
    params:
        options=canonical_of(lambda w: config["entry_space"]["ica"] if w.transform == "ica" else {}),
    script:
        "../workflow/scripts/transform_space.py"


rule isotropy:
    input:
        **INPUTS.of_encoder(
            model=False,
            spaces=[dag.space_file("{encoder}", "{dataset}", s) for s in ANALYSED],
            transforms=[dag.space_file("{encoder}", "{dataset}", s, "json") for s in TRANSFORMED],
        ),
    output:
        metrics=report(
            dag.isotropy_file("{encoder}", "{dataset}"),
            caption="../report/isotropy.rst",
            category="Entry spaces",
            subcategory="{encoder} on {dataset}",
        ),
        plots=report(
            [dag.space_plot("{encoder}", "{dataset}", s) for s in ANALYSED],
            caption="../report/entry_space.rst",
            category="Entry spaces",
            subcategory="{encoder} on {dataset}",
        ),
    log:
        dag.log_file("entry_spaces", "{encoder}", "{dataset}", "isotropy"),
    benchmark:
        dag.benchmark_file("entry_spaces", "{encoder}", "{dataset}", "isotropy")
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        names=ANALYSED,
        transformed=TRANSFORMED,
        options=canonical(config["entry_space"]["isotropy"]),
    script:
        "../workflow/scripts/isotropy.py"
