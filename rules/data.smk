# Evaluation and dictionary data in data/<name>: copied or linked from a local mirror, else downloaded from the
# official archives, and checked against data/checksums/<name>.sha256 (defsent_plus.acquisition). The only param is
# the data's identity (its manifest's checksum), so moving a mirror or switching to a download re-runs nothing.


rule acquire_data:
    output:
        directory(dag.data_dir("{data}")),
    log:
        dag.log_file("data", "{data}"),
    benchmark:
        dag.benchmark_file("data", "{data}")
    wildcard_constraints:
        data=alternatives(tuple(DATA)),
    localrule: True
    conda:
        "../envs/defsent.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=120,
    params:
        identity=canonical_of(lambda w: acquisition_identity(DATA[w.data])),
    script:
        "../workflow/scripts/acquire_data.py"
