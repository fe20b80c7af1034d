# Every run side by side: STS in the layout of 000's Table 2 (starting models, each method's seeds as mean ± std,
# its dev-selected model) and the reverse dictionary of every held-out run with each method's protocol stated.


rule compare_sts:
    input:
        sts=[record["sts"] for record in PLAN.sts_comparison()],
        pairs=lambda wildcards: PLAN.comparison_pairs(),
        scores=lambda wildcards: PLAN.comparison_scores(),  # their provenance, on the page
    output:
        tsv=dag.compare_file("sts.tsv"),
        md=dag.compare_file("sts.md"),
        uncertainty=dag.compare_file("sts_uncertainty.tsv"),  # every interval and paired test, in columns
    log:
        dag.log_file("compare", "sts"),
        work=dag.work_clock_file("compare", "sts"),
    benchmark:
        dag.benchmark_file("compare", "sts")
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        runs=canonical(PLAN.sts_comparison()),
        poolings=config["evaluation"]["poolings"],
        bootstrap=canonical(config["evaluation"]["bootstrap"]),
        published=canonical(config["published"]),
    script:
        "../workflow/scripts/compare.py"


use rule compare_sts as compare_reverse_dictionary with:
    input:
        json=[record["json"] for record in PLAN.reverse_dictionary_comparison()],
    output:
        tsv=dag.compare_file("reverse_dictionary.tsv"),
        md=dag.compare_file("reverse_dictionary.md"),
        paired=dag.compare_file("reverse_dictionary_paired.tsv"),  # trained − base, bounds and p in columns
    log:
        dag.log_file("compare", "reverse_dictionary"),
        work=dag.work_clock_file("compare", "reverse_dictionary"),
    benchmark:
        dag.benchmark_file("compare", "reverse_dictionary")
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        runs=canonical(PLAN.reverse_dictionary_comparison()),
        poolings=None,
        bootstrap=None,
        published=None,


# The front page: the comparison tables, the STS-by-step plots and links to each run's files; summary.rst is the
# HTML report's workflow description (Snakefile: report), so `snakemake --report` opens on the comparison.
rule summary:
    input:
        pages=PLAN.comparison_pages(),
        plots=[dag.run_file(run, "sts_by_step.png") for run in config["runs"]],
        details=[path for record in PLAN.run_details() for path in record["files"]],
    output:
        md=dag.compare_file("summary.md"),
        rst=dag.compare_file("summary.rst"),
    log:
        dag.log_file("compare", "summary"),
    benchmark:
        dag.benchmark_file("compare", "summary")
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        runs=canonical(PLAN.run_details()),
        plotted=list(config["runs"]),
    script:
        "../workflow/scripts/summary.py"
