# Reverse dictionary on held-out entries: for a run whose dataset is a subset with a held-out split, the final
# step's dev-selected model ranks every entry of the space it was trained on for each held-out definition.


rule reverse_dictionary:
    input:
        model=lambda w: encoder_dir(f"{w.run}.step{final_step(w.run)}"),
        spaces=lambda w: final_spaces(w.run),
        dataset=lambda w: dataset_path(run_cfg(w)["dataset"]),
        queries=lambda w: queries_path(run_cfg(w)["dataset"]),
        base=lambda w: model_input(run_cfg(w)["model"]),
        base_space=lambda w: space_path(w.run, 1, "amp"),
    output:
        json="results/{run}/eval/reverse_dictionary.json",
        tsv=report(
            "results/{run}/eval/reverse_dictionary.tsv",
            caption="../report/reverse_dictionary.rst",
            category="Reverse dictionary",
        ),
        md="results/{run}/eval/reverse_dictionary.md",
    params:
        base=lambda w, input: located_model(input.base, run_cfg(w)["model"]),
        batch_size=config["evaluation"]["batch_size"],
        max_length=config["evaluation"]["max_length"],
        title=lambda w: f"Reverse dictionary on held-out entries, run {w.run}",
    log:
        "logs/{run}/eval/reverse_dictionary.log",
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=120,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/reverse_dictionary.py"
