rule train:
    input:
        base=lambda w: model_input(run_cfg(w)["model"]),
        dataset=lambda w: dataset_path(run_cfg(w)["dataset"]),
        space=lambda w: space_path(w.run, w.step, w.space),
        selection=lambda w: after_selection(w.run, int(w.step) - 1),
    output:
        model=directory("results/{run}/step{step}/{space}/seed{seed}/model"),
        summary="results/{run}/step{step}/{space}/seed{seed}/train.json",
    params:
        base=lambda w, input: located_model(input.base, run_cfg(w)["model"]),
        lr=lambda w: step_cfg(w)["lr"],
        batch_size=lambda w: run_cfg(w)["batch_size"],
        pooling=lambda w: run_cfg(w)["training_pooling"],
        options=config["training"],
    log:
        "logs/{run}/step{step}/{space}/seed{seed}/train.log",
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
        runtime=240,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/train.py"


rule dev_score:
    input:
        model="results/{run}/step{step}/{space}/seed{seed}/model",
        selection=lambda w: after_selection(w.run, int(w.step) - 1),
    output:
        "results/{run}/step{step}/{space}/seed{seed}/dev.json",
    params:
        model=lambda w, input: input.model,
        senteval_dir=senteval_dir(),
        benchmark="dev",
        pooling=config["selection"]["pooling"],
        batch_size=config["selection"]["batch_size"],
        max_length=config["selection"]["max_length"],
        label=lambda w: f"{w.run}.step{w.step}.{w.space}.seed{w.seed}",
    log:
        "logs/{run}/step{step}/{space}/seed{seed}/dev.log",
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/score.py"


# A checkpoint: the next step's entry space and the evaluation read the selected candidate's own model
# directory from best.json, so re-selecting the same candidate (e.g. after adding a seed) re-runs nothing after it.
checkpoint select_best:
    input:
        dev=lambda w: candidate_files(w, "dev.json"),
        models=lambda w: candidate_files(w, "model"),
        selection=lambda w: after_selection(w.run, int(w.step) - 1),
    params:
        candidates=lambda w: [{"space": space, "seed": seed} for space, seed in step_candidates(w.run, w.step)],
    output:
        best="results/{run}/step{step}/best.json",
        model=directory("results/{run}/step{step}/best"),
    log:
        "logs/{run}/step{step}/select_best.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/select_best.py"
