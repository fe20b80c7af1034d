rule dictionary:
    input:
        tokenizer=dag.pinned_model(config["dictionary"]["tokenizer"]),
        **dag.acquired_sources(config["dictionary"]["sources"]),
    output:
        a=dag.dictionary_file("a.parquet"),
        b=dag.dictionary_file("b.parquet"),
        c=dag.dictionary_file("c.parquet"),
        stats=dag.dictionary_file("stats.tsv"),
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        sources=canonical(config["dictionary"]["sources"]),
        primary=config["dictionary"]["primary"],
        lowercase=config["dictionary"]["lowercase"],
        on_malformed=config["dictionary"]["on_malformed"],
    log:
        dag.log_file("dictionary", "dictionary"),
    benchmark:
        dag.benchmark_file("dictionary", "dictionary"),
    threads: 1
    resources:
        mem_mb=6000,
        runtime=30,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/dictionary.py"


rule dictionary_subset:
    input:
        dataset=lambda w: PLAN.dataset_file(config["subsets"][w.dataset]["dataset"]),
    output:
        subset=dag.subset_file("{dataset}"),
    params:
        max_entries=lambda w: config["subsets"][w.dataset].get("max_entries"),
        seed=lambda w: config["subsets"][w.dataset]["seed"],
    wildcard_constraints:
        dataset=PLAN.subset_pattern(heldout=False),
    log:
        dag.log_file("dictionary", "subset_{dataset}"),
    benchmark:
        dag.benchmark_file("dictionary", "subset_{dataset}"),
    priority: CHAIN_PRIORITY
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../envs/defsent.yaml"
    script:
        "../workflow/scripts/dictionary_subset.py"


# A subset with a held-out split (subsets.<name>.heldout): entries split by headword (8:1:1 by default), plus the
# queries taken out of the dev/test entries' definitions for the reverse-dictionary evaluation.
use rule dictionary_subset as heldout_subset with:
    output:
        subset=dag.subset_file("{dataset}"),
        queries=dag.subset_file("{dataset}", "queries.parquet"),
    params:
        heldout=canonical_of(lambda w: PLAN.heldout(w.dataset)),
    wildcard_constraints:
        dataset=PLAN.subset_pattern(heldout=True),
