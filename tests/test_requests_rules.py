"""What the encoding rules and transform_space ask their scheduler for: their job's work in the config through the
cost model (defsent_plus.pipeline.job_model.rule_request), with the margin; the DAG gives each job its own, and a
user's request below a job's projection is flagged before anything runs."""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys

import pytest
import yaml
from conftest import REPO
from workflow_utils import ran_and_modelled, snakemake, validated, write_tiny_config

from defsent_plus.pipeline.job_model import JOB_KINDS, projected_kinds, requests_below_projection, rule_request
from defsent_plus.pipeline.plan import Plan
from defsent_plus.pipeline.requests import BASELINE_EVALUATION_SENTENCES, EVALUATION_SENTENCES, dataset_size, projection

PAPER_CONFIG = REPO / "configs" / "defsent-bert-large.yaml"


def config_and_plan(path):
    config = validated(yaml.safe_load(path.read_text()))
    return config, Plan(config, selection=lambda run, step: {})


def test_the_evaluation_set_sizes_are_the_local_datas(senteval_dir):
    from defsent_plus.baselines.sentences import evaluation_set
    from defsent_plus.evaluation.sentence_sets import sentences_of_set
    from defsent_plus.sts import STS_TASKS

    assert {name: len(sentences_of_set(name, senteval_dir)) for name in EVALUATION_SENTENCES} == EVALUATION_SENTENCES
    alignment = validated(yaml.safe_load((REPO / "config.yaml").read_text()))["baselines"]["alignment"]
    assert len(evaluation_set(senteval_dir, STS_TASKS, alignment).sentences) == BASELINE_EVALUATION_SENTENCES


def test_an_encoding_request_grows_with_the_sentences_and_the_model_and_keeps_its_margin():
    config, plan = config_and_plan(REPO / "config.yaml")
    small = rule_request(config, plan, "embed", {"encoder": "minilm", "sentences": "stsb-dev"}, on_gpu=False)
    large = rule_request(config, plan, "embed", {"encoder": "minilm", "sentences": "senteval"}, on_gpu=False)
    assert small.seconds < large.seconds and small.mem_mb < large.mem_mb
    assert large.runtime >= config["costs"]["margin"] * large.seconds / 60
    assert small.runtime >= config["costs"]["min_runtime_minutes"]
    paper, paper_plan = config_and_plan(PAPER_CONFIG)
    run = next(iter(paper["runs"]))
    model = paper["runs"][run]["model"]
    bert_large = rule_request(paper, paper_plan, "embed", {"encoder": model, "sentences": "senteval"}, on_gpu=False)
    assert bert_large.seconds > large.seconds and bert_large.mem_mb > large.mem_mb
    on_gpu = rule_request(paper, paper_plan, "embed", {"encoder": model, "sentences": "senteval"}, on_gpu=True)
    assert on_gpu.seconds < bert_large.seconds
    assert on_gpu.mem_mb > large.mem_mb  # the node still loads BERT-large's weights


def test_an_entry_space_and_its_ica_grow_with_the_dataset():
    config, plan = config_and_plan(REPO / "config.yaml")
    whole = copy.deepcopy(config)
    whole["subsets"]["a1k"]["max_entries"] = 100_000
    requests = {}
    for name, cfg in (("subset", config), ("whole", whole)):
        plan_of = Plan(cfg, selection=lambda run, step: {})
        requests[name] = {rule: rule_request(cfg, plan_of, rule, {"encoder": "minilm", "dataset": "a1k",
                                                                   "transform": transform}, on_gpu=False)
                          for rule, transform in (("entry_space", None), ("transform_space", "ica"))}
    for rule in ("entry_space", "transform_space"):
        assert requests["subset"][rule].seconds < requests["whole"][rule].seconds
    center = rule_request(whole, Plan(whole, selection=lambda run, step: {}), "transform_space",
                          {"encoder": "minilm", "dataset": "a1k", "transform": "center"}, on_gpu=False)
    assert center.seconds < requests["whole"]["transform_space"].seconds
    ica_on_gpu = rule_request(whole, Plan(whole, selection=lambda run, step: {}), "transform_space",
                              {"encoder": "minilm", "dataset": "a1k", "transform": "ica"}, on_gpu=True)
    assert ica_on_gpu.seconds < requests["whole"]["transform_space"].seconds
    assert dataset_size(whole, "a1k")[1] == 100_000


def test_defsents_reverse_dictionary_encodes_every_definition_and_asks_for_it():
    config, plan = config_and_plan(REPO / "config.yaml")
    runs = {plan.method(run).target: run for run in config["runs"]}
    vocab = rule_request(config, plan, "reverse_dictionary", {"run": runs["vocab"]}, on_gpu=False)
    others = [rule_request(config, plan, "reverse_dictionary", {"run": run}, on_gpu=False)
              for target, run in runs.items() if target != "vocab"]
    assert others and all(vocab.seconds > other.seconds for other in others)


def test_a_rule_without_a_request_model_is_refused():
    from defsent_plus.errors import DefSentError

    config, plan = config_and_plan(REPO / "config.yaml")
    with pytest.raises(DefSentError, match="no request model"):
        rule_request(config, plan, "score", {"encoder": "minilm"}, on_gpu=False)


@pytest.mark.workflow
def test_the_dag_gives_each_encoding_job_its_projected_request(tmp_path):
    """The default DAG's embed, entry_space, transform_space, reverse_dictionary and baseline_embed jobs ask what
    rule_request projects."""
    (tmp_path / "nltk_data").symlink_to(REPO / "nltk_data")  # the default's WordNet source, an input of its dictionary
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--cores", "2",
                          "--directory", str(tmp_path), "--snakefile", str(REPO / "Snakefile"),
                          "--configfile", str(REPO / "config.yaml")],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    config, plan = config_and_plan(REPO / "config.yaml")
    seen = set()
    for rule, wildcards, resources in re.findall(
            r"^rule (embed|entry_space|transform_space|reverse_dictionary|baseline_embed):\n"
            r"(?:    .*\n)*?    wildcards: (.*)\n(?:    .*\n)*?"
            r"    resources: (.*)\n", out, flags=re.M):
        asked = dict(part.split("=", 1) for part in resources.split(", "))
        request = rule_request(config, plan, rule, dict(p.split("=", 1) for p in wildcards.split(", ")), False)
        assert (int(asked["runtime"]), int(asked["mem_mb"])) == (request.runtime, request.mem_mb)
        seen.add(rule)
    assert seen == {"embed", "entry_space", "transform_space", "reverse_dictionary", "baseline_embed"}


def test_every_rule_asking_for_a_projected_request_has_its_jobs_enumerated():
    rules = "".join(path.read_text() for path in (REPO / "rules").glob("*.smk"))
    assert set(re.findall(r'projected_request\("(\w+)"', rules)) == set(projected_kinds())


def test_every_rule_of_the_workflow_has_one_job_declaration():
    rules = "".join(path.read_text() for path in (REPO / "rules").glob("*.smk"))
    declared = set(re.findall(r"^(?:rule|checkpoint) (\w+):|^use rule \w+ as (\w+)", rules, flags=re.M))
    assert {name for pair in declared for name in pair if name} - {"all"} == set(JOB_KINDS)


@pytest.mark.workflow
@pytest.mark.parametrize("fixture", ["tiny_run", "tiny_rehearsal"])
def test_the_job_model_plans_the_jobs_a_dag_runs_from_empty_no_more_no_less(fixture, request):
    """The tiny config (DefSent+, PST, whitening and ICA, MTEB, baselines) and RoBERTa's DefSent rehearsal (held-out
    reverse dictionary, its comparison): every rule's jobs as the plan reads them are the jobs Snakemake ran
    (every shipped config's rehearsal: tests/test_shipped_configs.py)."""
    ran, modelled = ran_and_modelled(request.getfixturevalue(fixture))
    assert ran == modelled, f"ran, not in the job model: {ran - modelled}; in it, not ran: {modelled - ran}"


def largest_projection(config, plan, rule, key):
    """(the largest projection of ``key`` among ``rule``'s jobs, the first job that has it)."""
    return max(((projection(config, rule_request(config, plan, rule, job, on_gpu=False))[key], job)
                for job in projected_kinds()[rule].jobs(plan)), key=lambda pair: pair[0])


def test_a_request_below_a_rules_largest_projection_is_flagged_with_its_job_and_one_at_it_is_not():
    config, plan = config_and_plan(REPO / "config.yaml")
    for rule in projected_kinds():
        for key in ("runtime", "mem_mb"):
            top, job = largest_projection(config, plan, rule, key)
            named = ", ".join(f"{name}={value}" for name, value in job.items())
            assert not requests_below_projection(config, plan, {rule: {key: top}}, lambda rule: False)
            problems = requests_below_projection(config, plan, {rule: {key: top - 0.5}}, lambda rule: False)
            assert len(problems) == 1 and problems[0].startswith(f"rule {rule}: {key}={top - 0.5} is below the "
                                                                 "projection "), problems
            assert f"of its job {named} (" in problems[0]


@pytest.mark.workflow
def test_the_dag_flags_a_user_request_below_an_encoding_rules_projection(tmp_path, tiny_bert):
    """--set-resources below a projection (entry_space's runtime, embed's mem_mb) is warned about when the DAG is
    built, naming the rule and the projection; requests at the projections are not."""
    write_tiny_config(tmp_path, tiny_bert)
    config = validated(yaml.safe_load((tmp_path / "config.yaml").read_text()))
    plan = Plan(config, selection=lambda run, step: {})
    runtime, _ = largest_projection(config, plan, "entry_space", "runtime")
    mem_mb, _ = largest_projection(config, plan, "embed", "mem_mb")
    out = snakemake(tmp_path, "--dry-run", "--set-resources", "entry_space:runtime=0", "embed:mem_mb=100")
    log = out.stdout + out.stderr
    assert (f"Request too small: rule entry_space: runtime=0 is below the projection {math.ceil(runtime * 10) / 10} "
            "min of its job encoder=tiny") in log
    assert f"Request too small: rule embed: mem_mb=100 is below the projection {math.ceil(mem_mb)} MB" in log
    out = snakemake(tmp_path, "--dry-run", "--set-resources", f"entry_space:runtime={math.ceil(runtime)}",
                    f"embed:mem_mb={math.ceil(mem_mb)}")
    assert "Request too small" not in out.stdout + out.stderr
