"""What the ``baselines`` config block asks for: which encoders get which grid, and the combinations of a grid.

A grid (``baselines.grids.<name>``) is a product of templates x layer sets x aggregations x sources x
post-processing x fit, pruned where a combination means nothing (a mask aggregation without a mask, CLS of a static
model, static and random models inside a template, the fit of "no post-processing"). ``layer_sweep`` adds every single
layer (003's layer -1 to the last) for the named aggregations, with no post-processing: the per-layer plot.

Prompt templates (003 Section 3.2.2, Table 1): the sentence is placed at ``{sentence}``, every ``{mask}`` becomes the
model family's own mask token; ``none`` is the sentence as it is. T0 is PromptBERT's template with its spacing, as the
workflow's ``prompt`` pooling uses it; T1-T4 are 003's multi-mask templates, written as in its Table 1.

A cache (one directory per encoder and template) keeps ``<layer set>/<source>.<aggregation>.<split>.npy`` and
``index.json`` (:func:`cache_file`).

Light on purpose (no torch): Snakemake calls it while parsing, to give each job exactly its own params.
"""

from __future__ import annotations

import re
from dataclasses import astuple, dataclass
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.names import POOLINGS, PROMPT_TEMPLATE

STATIC_LAYER = -1  # 003's layer -1: the rows of the input embedding matrix
LAST = "last"
AGGREGATIONS = ("cls", "mean", "mean_nospecial", "max", "idf", "idf_task", "biases", "mask")
TRANSDUCTIVE_AGGREGATIONS = ("idf_task",)  # fitted on the evaluated task's own sentences
ENCODER, AVG, ENCODER_AVG, RANDOM = "encoder", "avg", "encoder+avg", "random"
ENCODER_ONLY_AGGREGATIONS = ("cls", "mask")  # a static model's [CLS] or [MASK] is the same vector in every sentence
POSTPROCESSORS = ("none", "center", "zscore", "quantile", "whiten", "abtt", "l2")
NO_FIT = "-"
RANDOM_LAYERS = "-"  # random embeddings have no layers
SHARED_SENTENCE_SETS = ("sts",)  # sets an embed job reads from a cache (not STS-B dev: see baselines.reuse)
SHARED_POOLINGS = tuple(a for a in AGGREGATIONS if a in POOLINGS)  # aggregations the embedding stage pools alike
ABTT_STEP = re.compile(r"^abtt(?P<d>\d+)?$")
INDEX = "index.json"  # a cache's index: layer sets, sentence fingerprints, fallback counts, provenance


NO_TEMPLATE = "none"
TEMPLATES: dict[str, str] = {
    NO_TEMPLATE: "{sentence}",
    "T0": PROMPT_TEMPLATE,
    "T1": 'This sentence: "{sentence}" means {mask}{mask}.',
    "T2": 'This sentence: "{sentence}" means "{mask}{mask}" and is about {mask}.',
    "T3": 'This sentence from the paraphrase dictionary: "{sentence}" means "{mask}", which is about {mask}.',
    "T4": 'This sentence from the dictionary: "{sentence}" means "{mask}" and is about {mask}, which is a synonym '
          "for {mask}.",
}


def template_text(name: str, custom: dict[str, str], key: str) -> str:
    """The text of a built-in or user template (``baselines.templates``), checked: ``{sentence}`` exactly once and,
    except for ``none``, at least one ``{mask}``."""
    text = custom.get(name, TEMPLATES.get(name))
    if text is None:
        raise DefSentError(key, f"unknown template {name!r}; expected one of {sorted({*TEMPLATES, *custom})}")
    if text.count("{sentence}") != 1:
        raise DefSentError(key, f"template {name!r} must contain {{sentence}} exactly once, got {text!r}")
    if name != NO_TEMPLATE and "{mask}" not in text:
        raise DefSentError(key, f"template {name!r} has no {{mask}} token: a prompt needs at least one, "
                                f"got {text!r}")
    try:
        render(text, "x", "[MASK]")
    except (KeyError, IndexError, ValueError) as err:
        raise DefSentError(key, f"template {name!r} may only use the fields {{sentence}} and {{mask}}: {err}") from None
    return text


def render(text: str, sentence: str, mask_token: str) -> str:
    """The model input of one sentence."""
    return text.format(sentence=sentence, mask=mask_token)


def render_all(text: str, sentences: list[str], tokenizer, max_length: int) -> tuple[list[str], int]:
    """Model inputs of ``sentences`` in a template, and how many sentences were cut so that the template (and its
    mask tokens) still fits in ``max_length`` tokens; cut at a token boundary of the original text."""
    mask = tokenizer.mask_token or ""
    if text == TEMPLATES[NO_TEMPLATE]:
        return list(sentences), 0
    budget = max_length - len(tokenizer(render(text, "", mask))["input_ids"])
    if budget < 1:
        raise DefSentError("config: baselines.max_length", f"template {text!r} alone needs more than {max_length} "
                                                           "tokens")
    encoded = tokenizer(list(sentences), add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    rendered, cut = [], 0
    for sentence, offsets in zip(sentences, encoded, strict=True):
        if len(offsets) > budget:
            sentence, cut = sentence[:offsets[budget - 1][1]], cut + 1
        rendered.append(render(text, sentence, mask))
    return rendered, cut


@dataclass(frozen=True)
class Combination:
    """One row of a grid's table."""

    source: str
    template: str
    layers: str  # the layer set's name (see :func:`layer_set_name`), "-" for random embeddings
    aggregation: str
    postprocess: str
    fit: str
    sweep: bool = False


def check_grid(grid: dict, custom_templates: dict, key: str) -> None:
    """Every template and post-processing chain of a grid is known (the schema checks the other names); raises naming
    the config key."""
    for k, template in enumerate(grid["templates"]):
        template_text(template, custom_templates, f"{key}.templates[{k}]")
    for k, chain in enumerate(grid["postprocess"]):
        parse_chain(chain, f"{key}.postprocess[{k}]")


def parse_chain(chain: str, key: str, abtt_components: int = 1) -> list[tuple[str, int | None]]:
    """``zscore+abtt3+l2`` -> [("zscore", None), ("abtt", 3), ("l2", None)]; ``abtt`` alone removes
    ``abtt_components`` directions (baselines.abtt_components). ``none`` is the empty chain."""
    steps = []
    for part in chain.split("+"):
        match = ABTT_STEP.match(part)
        name, d = ("abtt", match.group("d") or None) if match else (part, None)
        if name not in POSTPROCESSORS or (name == "none" and chain != "none") or d == "0":
            raise DefSentError(key, f"unknown post-processing {chain!r}: expected 'none' or steps joined by '+' from "
                                    f"{list(POSTPROCESSORS[1:])} ('abtt<d>' removes d directions)")
        if name != "none":
            steps.append((name, int(d) if d is not None else (abtt_components if name == "abtt" else None)))
    return steps


def layer_set_name(layers: tuple[int, ...]) -> str:
    """``(-1,)`` -> ``static``; ``(0,)`` -> ``L0``; ``(1, 6)`` -> ``L1+L6``."""
    return "+".join("static" if layer == STATIC_LAYER else f"L{layer}" for layer in layers)


def resolve_layers(spec: list, n_layers: int, key: str) -> tuple[int, ...]:
    """A configured layer set (ints from -1 to the model's layer count, or ``last``) for a model with ``n_layers``
    transformer layers; -1 is the static token embeddings, 0 the embedding output."""
    resolved = []
    for k, layer in enumerate(spec):
        value = n_layers if layer == LAST else layer
        if not isinstance(value, int) or isinstance(value, bool) or not STATIC_LAYER <= value <= n_layers:
            raise DefSentError(f"{key}[{k}]", f"unknown layer {layer!r} for a model with {n_layers} layers: expected "
                                              f"-1 (static token embeddings), 0 (embedding output), 1..{n_layers} or "
                                              f"'{LAST}'")
        resolved.append(value)
    if len(set(resolved)) != len(resolved):
        raise DefSentError(key, f"layer set {spec} names a layer twice")
    return tuple(sorted(resolved))


def layer_sets(layers: list, sweep: list, n_layers: int,
               key: str) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """(the configured layer sets, the single-layer sets of the sweep if any), resolved for the model."""
    main = [resolve_layers(spec, n_layers, f"{key}.layers[{k}]") for k, spec in enumerate(layers)]
    return list(dict.fromkeys(main)), [(layer,) for layer in range(STATIC_LAYER, n_layers + 1)] if sweep else []


def aggregations_for(aggregations, template: str, source: str, custom_templates: dict) -> list[str]:
    """The aggregations that mean something for a template and source (encoder + Avg. has only those both share)."""
    masked = "{mask}" in template_text(template, custom_templates, "baselines.templates")
    return [a for a in aggregations
            if (a != "mask" or masked) and (a not in ENCODER_ONLY_AGGREGATIONS or source == ENCODER)]


def for_layers(aggregations: list[str], layers: tuple[int, ...]) -> list[str]:
    """CLS and mask vectors need a transformer layer: below it ([CLS] and [MASK] as input rows, or the embedding
    output) they carry no sentence (the same vector, or one per position, for every sentence)."""
    contextual = max(layers) >= 1
    return [a for a in aggregations if contextual or a not in ENCODER_ONLY_AGGREGATIONS]


def sources_for(grid: dict, template: str) -> list[str]:
    """Static and random models are token-level: 003 builds them without a template."""
    return [s for s in grid["sources"] if template == NO_TEMPLATE or s == ENCODER]


def combinations(grid: dict, n_layers: int, custom_templates: dict, key: str) -> list[Combination]:
    """Every row of a grid, in a stable order: the main product first, then the layer sweep."""
    main_sets, sweep_sets = layer_sets(grid["layers"], grid["layer_sweep"], n_layers, key)
    post_fits = [(post, fit) for post in grid["postprocess"]  # "none" once, every other chain once per fit
                 for fit in (grid["fit"] if post != "none" else [NO_FIT])]
    rows = []
    for template in grid["templates"]:
        for source in sources_for(grid, template):
            sets = main_sets if source != RANDOM else [None]
            for layers in sets:
                aggregations = aggregations_for(grid["aggregations"], template, source, custom_templates)
                for aggregation in for_layers(aggregations, layers) if layers else aggregations:
                    rows += [Combination(source, template, layer_set_name(layers) if layers else RANDOM_LAYERS,
                                         aggregation, post, fit) for post, fit in post_fits]
        if ENCODER in grid["sources"]:
            for layers in sweep_sets:
                swept = aggregations_for(grid["layer_sweep"], template, ENCODER, custom_templates)
                for aggregation in for_layers(swept, layers):
                    row = Combination(ENCODER, template, layer_set_name(layers), aggregation, "none", NO_FIT, True)
                    if Combination(*astuple(row)[:-1], False) not in rows:  # not already a row of the main product
                        rows.append(row)
    return rows


def extraction_request(grid: dict, template: str, custom_templates: dict) -> dict:
    """What one (encoder, template) forward pass must produce: the params of its job."""
    sources = sources_for(grid, template)
    aggregations = {source: aggregations_for(grid["aggregations"], template, source, custom_templates)
                    for source in sources}
    if ENCODER_AVG in aggregations:  # encoder + Avg. is the mean of the two sentence embeddings
        for source in (ENCODER, AVG):
            aggregations[source] = list(dict.fromkeys([*aggregations.get(source, []), *aggregations[ENCODER_AVG]]))
        del aggregations[ENCODER_AVG]
    return {
        "template": template,
        "text": template_text(template, custom_templates, "baselines.templates"),
        "layers": grid["layers"],
        "sweep": aggregations_for(grid["layer_sweep"], template, ENCODER, custom_templates)
        if ENCODER in grid["sources"] else [],
        "aggregations": aggregations,
    }


def caches_last_layer(request: dict, aggregation: str) -> bool:
    """Whether a forward pass's ``request`` caches the encoder's last layer alone, sentences as they are (template
    ``none``), with ``aggregation``: through the layer sweep or a ``[last]`` layer set."""
    encoder_layers = [LAST] in request["layers"] and aggregation in request["aggregations"].get(ENCODER, [])
    return request["template"] == NO_TEMPLATE and (aggregation in request["sweep"] or encoder_layers)


def extraction_options(config: dict, request: dict) -> dict:
    """The baselines options one forward pass depends on (its job's params: nothing of the scoring, and the bias and
    random-vector options only where its request uses them); without a template also ``evaluation.batch_size``, the
    batches of its STS sentences (:mod:`defsent_plus.baselines.reuse`)."""
    baselines = config["baselines"]
    keys = ["alignment", "batch_size", "max_length"]
    if any("biases" in names for names in (request["sweep"], *request["aggregations"].values())):
        keys += ["frequent_tokens", "biases"]
    if RANDOM in request["aggregations"]:
        keys.append("random")
    options = {key: baselines[key] for key in keys}
    if request["template"] == NO_TEMPLATE:  # the STS sentences batched as rule embed batches them (baselines.reuse)
        options["sts_batch_size"] = config["evaluation"]["batch_size"]
    return options


def scoring_options(config: dict) -> dict:
    """The options of scoring a grid from the cache."""
    baselines = config["baselines"]
    return {"abtt_components": baselines["abtt_components"], "alignment": baselines["alignment"],
            "fit_corpus": baselines["fit_corpus"], "sts_aggregation": config["evaluation"]["sts_aggregation"],
            "isotropy_seed": baselines["isotropy"]["seed"], "isotropy_pairs": baselines["isotropy"]["n_pairs"],
            "bootstrap": config["evaluation"]["bootstrap"]}


def cache_file(root: str | Path, layers: str, source: str, aggregation: str, split: str) -> Path:
    """A cached sentence embedding: float32 rows of ``split`` (``eval``, ``corpus``, or ``eval-<task>`` for the
    transductive ``idf_task``)."""
    return Path(root) / layers / f"{source}.{aggregation}.{split}.npy"
