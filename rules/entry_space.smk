rule entry_space:
    input:
        dataset=lambda w: dataset_path(w.dataset),
        encoder=encoder_input,
    output:
        ac=f"{SPACE_DIR}/ac.npy",
        amp=f"{SPACE_DIR}/amp.npy",
        meta=f"{SPACE_DIR}/entry_space.json",
    params:
        encoder=lambda w, input: located_model(input.encoder, w.encoder),
        batch_size=config["entry_space"]["batch_size"],
        max_length=config["entry_space"]["max_length"],
    log:
        "logs/entry_spaces/{encoder}/{dataset}/entry_space.log",
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
        runtime=120,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/entry_space.py"


rule transform_space:
    input:
        space=f"{SPACE_DIR}/{{base}}.npy",
        selection=lambda w: after_selection_of(w.encoder),
    output:
        space=f"{SPACE_DIR}/{{base}}.{{transform}}.npy",
        info=f"{SPACE_DIR}/{{base}}.{{transform}}.json",
    params:
        options=lambda w: config["entry_space"]["ica"] if w.transform == "ica" else {},
    log:
        "logs/entry_spaces/{encoder}/{dataset}/{base}.{transform}.log",
    threads: lambda w: config["entry_space"]["ica"]["threads"] if w.transform == "ica" else 1
    resources:
        gpu=GPU,  # ICA runs on the GPU when there is one (backend auto)
        mem_mb=8000,
        runtime=120,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/transform_space.py"


rule isotropy:
    input:
        spaces=expand(f"{SPACE_DIR}/{{space}}.npy", space=config["entry_space"]["analyse"], allow_missing=True),
        selection=lambda w: after_selection_of(w.encoder),
    output:
        metrics=report(
            f"{SPACE_DIR}/isotropy.json",
            caption="../report/isotropy.rst",
            category="Entry spaces",
            subcategory="{encoder} on {dataset}",
        ),
        plots=report(
            expand(f"{SPACE_DIR}/plots/{{space}}.png", space=config["entry_space"]["analyse"], allow_missing=True),
            caption="../report/entry_space.rst",
            category="Entry spaces",
            subcategory="{encoder} on {dataset}",
        ),
    params:
        names=config["entry_space"]["analyse"],
        options=config["entry_space"]["isotropy"],
    log:
        "logs/entry_spaces/{encoder}/{dataset}/isotropy.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/isotropy.py"
