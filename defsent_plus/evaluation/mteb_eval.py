"""MTEB as an evaluator: MTEB's own STS tasks and scoring on the embedding stage's stored vectors.

The seven STS tasks are MTEB's task classes with their data read from the local SentEval layout by this project's
readers, never downloaded. The model (:func:`stored_vectors_encoder`) serves every sentence the embedding stage
already encoded and encodes any other with the workflow's encoder and pooling. Results go to MTEB's results-folder
layout, and :func:`cross_check` puts MTEB's main score beside this project's score per task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.sts import STS_TASKS, Embed, load_sts_task
from defsent_plus.io import sentences_digest

log = logging.getLogger(__name__)

MTEB_NAMES = {"STS12": "STS12", "STS13": "STS13", "STS14": "STS14", "STS15": "STS15", "STS16": "STS16",
              "STSB": "STSBenchmark", "SICKR": "SICK-R"}  # this project's STS task -> MTEB's task name


def local_sts_task(task: str, senteval_dir: str | Path) -> Any:
    """MTEB's task class for one of :data:`STS_TASKS`, its test split read from the local SentEval data."""
    import mteb
    from datasets import Dataset, DatasetDict

    if task not in MTEB_NAMES:
        raise DefSentError("mteb", f"no local data for STS task {task!r}; expected one of {list(MTEB_NAMES)}")
    pairs = load_sts_task(senteval_dir, task)
    mteb_task = mteb.get_task(MTEB_NAMES[task])
    mteb_task.dataset = DatasetDict({"test": Dataset.from_dict(
        {"sentence1": pairs.sentences1, "sentence2": pairs.sentences2, "score": pairs.gold.tolist()})})
    mteb_task.data_loaded = True
    revision = f"senteval-{sentences_digest([*pairs.sentences1, *pairs.sentences2, *map(str, pairs.gold)])}"
    mteb_task.metadata = mteb_task.metadata.model_copy(
        update={"dataset": {"path": f"local SentEval data ({task})", "revision": revision}})
    return mteb_task


def model_meta(name: str, revision: str, n_parameters: int | None, dim: int, max_tokens: int) -> Any:
    """MTEB's metadata of a workflow model (``name``: ``defsent-plus/<encoder>.<pooling>``)."""
    from mteb.models import ModelMeta

    return ModelMeta(loader=None, name=name, revision=revision, release_date=None, languages=["eng-Latn"],
                     n_parameters=n_parameters, memory_usage_mb=None, max_tokens=max_tokens, embed_dim=dim,
                     license=None, open_weights=True, public_training_code=None, public_training_data=None,
                     framework=["PyTorch"], similarity_fn_name="cosine", use_instructions=False,
                     training_datasets=None)


def stored_vectors_encoder(vectors: Mapping[str, np.ndarray], meta: Any, encode: Embed | None = None) -> Any:
    """An MTEB encoder serving ``vectors`` and encoding other sentences with ``encode`` (None: they are an error)."""
    from mteb.models.abs_encoder import AbsEncoder

    class StoredVectors(AbsEncoder):
        def __init__(self):
            self.model = None
            self.mteb_model_meta = meta
            self.vectors = dict(vectors)
            self.encoded = 0  # sentences that were not stored

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs) -> np.ndarray:
            texts = [text for batch in inputs for text in batch["text"]]
            missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
            if missing:
                if encode is None:
                    raise DefSentError("mteb", f"{len(missing)} sentences of {task_metadata.name} are not stored, "
                                               f"e.g. {missing[0]!r}, and no encoder was given")
                self.vectors.update(zip(missing, encode(missing), strict=True))
                self.encoded += len(missing)
            return np.stack([self.vectors[t] for t in texts])

    return StoredVectors()


def run_mteb(model: Any, tasks: Sequence[Any], results_dir: str | Path) -> dict[str, float]:
    """Run ``tasks`` on ``model``; write MTEB's results layout under ``results_dir``; MTEB's main score x 100 by our
    task name."""
    import mteb
    from mteb.cache import ResultCache

    results = mteb.evaluate(model, list(tasks), cache=ResultCache(str(results_dir)), overwrite_strategy="always",
                            show_progress_bar=False)
    ours = {mteb_name: task for task, mteb_name in MTEB_NAMES.items()}
    return {ours[result.task_name]: 100 * float(result.get_score()) for result in results.task_results}


MTEB_TIMINGS = ("evaluation_time", "date", "evaluation_phases")  # a task result's timings (each may be null)


def without_timings(results_dir: Path) -> dict[str, float]:
    """Null the timings (``MTEB_TIMINGS``) of every task result MTEB wrote under ``results_dir``, so that two runs'
    results compare byte for byte; returns each task's evaluation seconds (for the log)."""
    import json

    seconds = {}
    for path in sorted(results_dir.rglob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        if "task_name" not in result:  # model_meta.json
            continue
        seconds[result["task_name"]] = round(result.get("evaluation_time") or 0.0, 2)
        path.write_text(json.dumps({**result, **dict.fromkeys(MTEB_TIMINGS)}, indent=2) + "\n", encoding="utf-8")
    return seconds


def cross_check(mteb_scores: Mapping[str, float], project: Mapping[str, float],
                project_float32: Mapping[str, float]) -> pd.DataFrame:
    """Per task: MTEB's main score, this project's (Spearman x 100 of cosine, STS12-16 ``all``) and the same with
    its cosines rounded to float32, as MTEB computes them (docs/evaluation.md, "Cross-check"), and the differences."""
    rows = [{"task": task, "mteb_task": MTEB_NAMES[task], "mteb": mteb_scores[task], "project": project[task],
             "difference": mteb_scores[task] - project[task], "project_float32": project_float32[task],
             "difference_float32": mteb_scores[task] - project_float32[task]}
            for task in STS_TASKS if task in mteb_scores]
    return pd.DataFrame(rows)


def project_scores(pairs: str | Path, float32: bool = False) -> dict[str, float]:
    """This project's STS scores of the same vectors, STS12-16 aggregated ``all`` (as MTEB's datasets are), from
    the score job's per-pair similarities (whatever ``evaluation.sts_aggregation`` its table uses); ``float32``:
    with the similarities rounded to float32 first."""
    from defsent_plus.evaluation.sts import scores_of_pairs

    frame = pd.read_parquet(pairs)
    if float32:
        frame["similarity"] = frame["similarity"].astype(np.float32).astype(np.float64)
    return scores_of_pairs(frame, [t for t in STS_TASKS if t in set(frame["task"])], "all")


def write_mteb(*, embeddings: str | Path, record: str | Path, pairs: str | Path, senteval_dir: str | Path,
               model_dir: str | Path, out_dir: str | Path, out_check: str | Path, name: str, revision: str,
               pooling: str, extra_tasks: Sequence[str] = (), batch_size: int = 128, max_length: int = 128) -> None:
    """MTEB's STS tasks (and ``extra_tasks``) on one encoder's stored STS vectors: MTEB's results under ``out_dir``,
    the per-task comparison with this project's scores in ``out_check``."""
    import mteb

    from defsent_plus.evaluation.embeddings import read_sentence_embeddings, sentences_of_set
    from defsent_plus.io import atomic_path, read_json, write_tsv

    vectors, stored = read_sentence_embeddings(embeddings, record, sentences_of_set("sts", senteval_dir))
    details = read_json(record)
    encode = workflow_encode(model_dir, pooling, batch_size, max_length)
    meta = model_meta(name, revision, parameter_count(model_dir), int(stored["dim"]), int(details["max_length"]))
    model = stored_vectors_encoder(vectors, meta, encode)
    tasks = [local_sts_task(task, senteval_dir) for task in STS_TASKS]
    if extra_tasks:  # (an empty list would ask MTEB for every task it has)
        tasks += list(mteb.get_tasks(tasks=list(extra_tasks)))
    with atomic_path(out_dir) as tmp:
        scores = run_mteb(model, tasks, tmp)
        log.info("MTEB's seconds per task: %s", without_timings(Path(tmp)))
    if model.encoded:
        log.info("MTEB: %d sentences were not among the stored vectors and were encoded", model.encoded)
    check = cross_check(scores, project_scores(pairs), project_scores(pairs, float32=True))
    log.info("MTEB against this project's STS scores:\n%s", check.to_string(index=False))
    write_tsv(out_check, check, float_format="%.6f")


def workflow_encode(model_dir: str | Path, pooling: str, batch_size: int, max_length: int) -> Embed:
    """Sentences -> vectors with the workflow's encoder and pooling, loaded at the first sentence not stored (for
    MTEB tasks beyond the stored sets; the STS tasks never load it)."""
    from defsent_plus.encoders.encoding import device_for_run
    from defsent_plus.encoders.models import load_encoder
    from defsent_plus.evaluation.sts import encoder_embed

    def encode(sentences: list[str]) -> np.ndarray:
        embed = encoder_embed(load_encoder(model_dir).to(device_for_run()), pooling, batch_size, max_length)
        return embed(sentences)

    return encode


def parameter_count(model_dir: str | Path) -> int | None:
    """The encoder's parameter count from its safetensors header (no weights loaded)."""
    from safetensors import safe_open

    total = 0
    for path in sorted(Path(model_dir).glob("*.safetensors")):
        with safe_open(str(path), framework="np") as weights:
            total += sum(int(np.prod(weights.get_slice(key).get_shape())) for key in weights.keys())  # noqa: SIM118
    return total or None
