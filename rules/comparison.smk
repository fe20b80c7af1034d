# Every run side by side: STS in the layout of 000's Table 2 (starting models, each method's seeds as mean ± std,
# its dev-selected model) and the reverse dictionary of every held-out run with each method's protocol stated.


rule compare_sts:
    input:
        sts=[record["sts"] for record in PLAN.sts_comparison()],
    output:
        tsv=dag.compare_file("sts.tsv"),
        md=dag.compare_file("sts.md"),
    params:
        runs=canonical(PLAN.sts_comparison()),
        # not yet: the comparison's paired tests need the final models' pairs without scoring a selected model twice
        bootstrap=None,
    log:
        dag.log_file("compare", "sts"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/compare.py"


use rule compare_sts as compare_reverse_dictionary with:
    input:
        json=[record["json"] for record in PLAN.reverse_dictionary_comparison()],
    output:
        tsv=dag.compare_file("reverse_dictionary.tsv"),
        md=dag.compare_file("reverse_dictionary.md"),
    params:
        runs=canonical(PLAN.reverse_dictionary_comparison()),
        bootstrap=None,
    log:
        dag.log_file("compare", "reverse_dictionary"),
