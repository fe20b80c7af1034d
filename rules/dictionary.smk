rule dictionary:
    input:
        tokenizer=model_input(config["dictionary"]["tokenizer"]),
    output:
        a="results/dictionary/a.parquet",
        b="results/dictionary/b.parquet",
        c="results/dictionary/c.parquet",
        stats="results/dictionary/stats.tsv",
    params:
        sources=config["dictionary"]["sources"],
        primary=config["dictionary"]["primary"],
        lowercase=config["dictionary"]["lowercase"],
        on_malformed=config["dictionary"]["on_malformed"],
        tokenizer=lambda w, input: located_model(input.tokenizer, config["dictionary"]["tokenizer"]),
    log:
        "logs/dictionary/dictionary.log",
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
        lambda w: dataset_path(config["subsets"][w.dataset]["dataset"]),
    output:
        "results/dictionary/subsets/{dataset}.parquet",
    params:
        max_entries=lambda w: config["subsets"][w.dataset]["max_entries"],
        seed=lambda w: config["subsets"][w.dataset]["seed"],
    wildcard_constraints:
        dataset=subset_pattern(heldout=False),
    log:
        "logs/dictionary/subset_{dataset}.log",
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
        subset="results/dictionary/subsets/{dataset}.parquet",
        queries="results/dictionary/subsets/{dataset}.queries.parquet",
    params:
        heldout=lambda w: subset_heldout(w.dataset),
    wildcard_constraints:
        dataset=subset_pattern(heldout=True),
