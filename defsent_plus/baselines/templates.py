"""Prompt templates (003 Section 3.2.2, Table 1): the sentence is placed at ``{sentence}``, every ``{mask}`` becomes
the model family's own mask token. ``none`` is the sentence as it is.

T0 is PromptBERT's template with its spacing, as the workflow's ``prompt`` pooling uses it; T1-T4 are 003's
multi-mask templates, written as in its Table 1.
"""

from __future__ import annotations

from defsent_plus.errors import DefSentError
from defsent_plus.names import PROMPT_TEMPLATE

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


def has_mask(text: str) -> bool:
    return "{mask}" in text


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
