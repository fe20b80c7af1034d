# The embedding stage: each encoder's sentence embeddings of a named sentence set (STS, STS-B dev, SentEval) with one
# pooling, encoded once and read by every evaluator of that set (rules score, score_unpaired, dev_score). A new evaluator or
# table re-runs no forward pass. Where the encoder's baselines cache already holds the vectors (its last layer over
# the STS sentences, batched as here), the job reads them from there instead of encoding them a second time.


rule embed:
    input:
        **INPUTS.of_encoder(),
        senteval=dag.data_dir("senteval"),
        cache=lambda w: PLAN.embedding_job(w.encoder, w.sentences, w.pooling).get("cache", []),
    output:
        npy=dag.embedding_file("{encoder}", "{sentences}", "{pooling}"),
        json=dag.embedding_file("{encoder}", "{sentences}", "{pooling}", "json"),
    log:
        dag.log_file("embeddings", "{encoder}", "{sentences}_{pooling}"),
    benchmark:
        dag.benchmark_file("embeddings", "{encoder}", "{sentences}_{pooling}")
    wildcard_constraints:
        pooling=alternatives(POOLINGS),
    priority: CHAIN_PRIORITY
    conda:
        "../envs/defsent.yaml"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=projected_request("embed", "mem_mb"),
        runtime=projected_request("embed", "runtime"),
    params:
        pooling=lambda w: w.pooling,
        options=canonical_of(lambda w: PLAN.embedding_job(w.encoder, w.sentences, w.pooling)),
    script:
        "../workflow/scripts/embed.py"
