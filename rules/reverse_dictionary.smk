# Reverse dictionary on held-out entries, for a run whose dataset is a subset with a held-out split. DefSent+: the
# final step's dev-selected model ranks every entry of the space it was trained on for each held-out definition, the
# run's starting model (cosine to its own AMP space) the reference. DefSent: the final model ranks the whole
# vocabulary through its masked-LM head (DefSent's protocol), the starting model with its own head the reference.
# Every model also by cosine against the starting model's AMP space (like for like), with intervals and paired tests.


rule reverse_dictionary:
    input:
        **INPUTS.reverse_dictionary(),
    output:
        json=dag.run_file("{run}", "reverse_dictionary.json"),
        tsv=report(
            dag.run_file("{run}", "reverse_dictionary.tsv"),
            caption="../report/reverse_dictionary.rst",
            category="Reverse dictionary",
        ),
        md=dag.run_file("{run}", "reverse_dictionary.md"),
    log:
        dag.log_file("{run}", "eval", "reverse_dictionary"),
        work=dag.work_clock_file("{run}", "eval", "reverse_dictionary"),
    benchmark:
        dag.benchmark_file("{run}", "eval", "reverse_dictionary")
    conda:
        "../envs/defsent.yaml"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=projected_request("reverse_dictionary", "mem_mb"),
        runtime=projected_request("reverse_dictionary", "runtime"),
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        method=lambda w: PLAN.method(w.run).name,
        pooling=lambda w: run_cfg(w)["training_pooling"],
        batch_size=config["evaluation"]["batch_size"],
        max_length=config["evaluation"]["max_length"],
        title=lambda w: f"Reverse dictionary on held-out entries, run {w.run}",
        bootstrap=canonical(config["evaluation"]["bootstrap"]),
    script:
        "../workflow/scripts/reverse_dictionary.py"
