rule dictionary:
    input:
        unpack(lambda w: dag.dictionary_inputs(config["dictionary"]["sources"])),
        tokenizer=dag.pinned_model(config["dictionary"]["tokenizer"]),
    output:
        a=dag.dictionary_file("a.parquet"),
        b=dag.dictionary_file("b.parquet"),
        c=dag.dictionary_file("c.parquet"),
        stats=dag.dictionary_file("stats.tsv"),
    log:
        dag.log_file("dictionary", "dictionary"),
    benchmark:
        dag.benchmark_file("dictionary", "dictionary")
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=30,
    params:
        **BANNER,  # a rehearsal's banner (defsent_plus.banner); none on a real run
        sources=canonical(config["dictionary"]["sources"]),
        primary=config["dictionary"]["primary"],
        lowercase=config["dictionary"]["lowercase"],
        on_malformed=config["dictionary"]["on_malformed"],
    script:
        "../workflow/scripts/dictionary.py"


rule dictionary_subset:
    input:
        dataset=lambda w: PLAN.dataset_file(config["subsets"][w.dataset]["dataset"]),
    output:
        subset=dag.subset_file("{dataset}"),
    log:
        dag.log_file("dictionary", "subset_{dataset}"),
    benchmark:
        dag.benchmark_file("dictionary", "subset_{dataset}")
    wildcard_constraints:
        dataset=PLAN.subset_pattern(heldout=False),
    priority: GATE_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        max_entries=lambda w: config["subsets"][w.dataset].get("max_entries"),
        seed=lambda w: config["subsets"][w.dataset]["seed"],
    script:
        "../workflow/scripts/dictionary_subset.py"


# A subset with a held-out split (subsets.<name>.heldout): entries split by headword (8:1:1 by default), plus the
# queries taken out of the dev/test entries' definitions for the reverse-dictionary evaluation.
use rule dictionary_subset as heldout_subset with:
    output:
        subset=dag.subset_file("{dataset}"),
        queries=dag.subset_file("{dataset}", "queries.parquet"),
    wildcard_constraints:
        dataset=PLAN.subset_pattern(heldout=True),
    params:
        heldout=canonical_of(lambda w: PLAN.heldout(w.dataset)),
