"""Dictionary readers, normalisation, merge semantics and bad input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES, REPO

from defsent_plus.dictionary.datasets import (
    build_datasets,
    dataset_stats,
    parse_sources,
    single_token_entries,
    single_token_ids,
    token_lengths,
    write_dictionary_stage,
)
from defsent_plus.dictionary.sources import (
    DropCounts,
    detokenize_oxford,
    read_defsentplus,
    read_gcide,
    read_oxford,
    read_tsv,
    read_wordnet,
    wordnet_root,
)
from defsent_plus.dictionary.subsets import subsample_entries
from defsent_plus.dictionary.table import read_dataset
from defsent_plus.encoders.models import load_tokenizer
from defsent_plus.errors import DefSentError

OXFORD = {"name": "oxford", "type": "oxford", "path": str(FIXTURES / "oxford")}
GCIDE = {"name": "gcide", "type": "gcide", "path": str(FIXTURES / "gcide")}
TSV = {"name": "mine", "type": "tsv", "path": str(FIXTURES / "tsv" / "extra.tsv")}


@pytest.fixture(scope="module")
def tokenizer(minilm_path):
    return load_tokenizer(minilm_path)


@pytest.mark.parametrize(
    ("tokenised", "expected"),
    [
        ("move at a speed , never stopping .", "move at a speed, never stopping."),
        ("a long neck ( the tallest animal ) .", "a long neck (the tallest animal)."),
        ("someone 's friend ; a star .", "someone's friend; a star."),
        ("`` tall '' friend", "Tall friend"),
    ],
)
def test_detokenize_oxford_undoes_moses_tokenisation(tokenised, expected):
    assert detokenize_oxford(tokenised) == expected


def test_oxford_reader_reads_all_splits_and_strips_sense_suffix():
    drops = DropCounts()
    records = list(read_oxford(FIXTURES / "oxford", "oxford", "error", drops))
    assert [r.entry for r in records] == ["giraffe", "run", "giraffe", "lion", "dog", "New York"]
    assert records[0].text == "a large african mammal with a very long neck (the tallest living animal)."
    assert records[2].text == "someone's Tall friend; a constellation."
    assert drops.counts[("oxford", "blank_line")] == 1


def test_gcide_reader_reads_every_definition_across_parts_of_speech():
    records = list(read_gcide(FIXTURES / "gcide", "gcide", "error", DropCounts()))
    assert [(r.entry, r.text) for r in records][:2] == [
        ("dog", "A carnivorous animal kept as a pet."),
        ("Giraffe", "An African ruminant (Giraffa camelopardalis), the tallest of all animals."),
    ]
    assert [r.text for r in records if r.entry == "game"] == ["Sport of any kind.", "To play at any sport.", "   "]


def test_gcide_reader_default_is_the_packaged_dictionary():
    records = read_gcide(None, "gcide", "error", DropCounts())
    first = next(records)
    assert first.entry and first.text


def test_merge_dedupes_keeps_first_seen_order_and_sorts_entries(tokenizer):
    datasets = build_datasets([OXFORD, GCIDE, TSV], tokenizer)
    a = datasets.frames["a"]
    assert list(a["entry"]) == sorted(a["entry"])
    giraffe = a.set_index("entry").loc["giraffe"]
    assert giraffe["definitions"] == [
        "a large african mammal with a very long neck (the tallest living animal).",
        "someone's Tall friend; a constellation.",
        "An African ruminant (Giraffa camelopardalis), the tallest of all animals.",
        "an animal with a long neck",
    ]  # gcide's whitespace-padded copy of the oxford definition is a duplicate after normalisation
    assert giraffe["sources"] == ["oxford", "oxford", "gcide", "mine"]
    assert datasets.drops.counts[("gcide", "duplicate_definition")] == 1
    assert datasets.drops.counts[("gcide", "empty_definition")] == 1
    assert "new york" in set(a["entry"])


def test_datasets_are_nested_and_b_is_the_primary_source(tokenizer):
    frames = build_datasets([GCIDE, OXFORD, TSV], tokenizer).frames  # oxford is primary although not first
    a, b, c = (set(frames[k]["entry"]) for k in "abc")
    assert c <= b <= a
    assert b == {"giraffe", "run", "lion", "dog", "new york"}
    assert all(s == ["oxford"] for s in frames["b"]["sources"].map(sorted).map(set).map(list))
    assert c == {"run", "lion", "dog"}  # "new york" is two tokens, "giraffe" three word pieces


def test_primary_source_can_be_configured(tokenizer):
    frames = build_datasets([OXFORD, TSV], tokenizer, primary="mine").frames
    assert set(frames["b"]["entry"]) == {"giraffe", "cat"}


def test_single_token_filter_uses_the_real_minilm_vocabulary(tokenizer):
    frame = pd.DataFrame({"entry": ["giraffe", "dog", "lion", "animal", "new york", "ʘʘ"],
                          "definitions": [["d"]] * 6, "sources": [["s"]] * 6})
    kept = set(single_token_entries(frame, tokenizer)["entry"])
    assert kept == {"dog", "lion", "animal"}  # giraffe: gi ##raf ##fe; ʘʘ: [UNK]


def test_lowercasing_is_configurable(tokenizer):
    frames = build_datasets([OXFORD], tokenizer, lowercase=False).frames
    assert "New York" in set(frames["a"]["entry"])


def test_stats_table_reports_table1_columns_and_drops(tokenizer):
    datasets = build_datasets([OXFORD, GCIDE], tokenizer)
    stats = dataset_stats(datasets, tokenizer).set_index(["scope", "metric"])["value"]
    assert stats[("dataset:a", "entries")] == len(datasets.frames["a"])
    assert stats[("dataset:b", "sources")] == "oxford"
    assert stats[("dataset:c", "definitions")] == sum(map(len, datasets.frames["c"]["definitions"]))
    assert stats[("source:gcide", "dropped_empty_definition")] == 1
    assert stats[("dataset:a", "max_length_tokens")] >= stats[("dataset:a", "median_length_tokens")]


# ------------------------------------------------------------------------------------------ bad input


def write(path: Path, content: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def test_malformed_line_names_file_and_line(tmp_path):
    bad = write(tmp_path / "bad.tsv", "cat\ta small animal\ndog without a tab\n")
    with pytest.raises(DefSentError, match=r"bad.tsv:2: expected 2 tab-separated columns \(entry, definition\), "
                                           r"found 1 \(dictionary.on_malformed: skip skips such lines\)"):
        list(read_tsv(bad, "mine", "error", DropCounts()))


def test_malformed_lines_can_be_skipped_and_are_counted(tmp_path):
    bad = write(tmp_path / "bad.tsv", "cat\ta small animal\ndog without a tab\n")
    drops = DropCounts()
    assert [r.entry for r in read_tsv(bad, "mine", "skip", drops)] == ["cat"]
    assert drops.counts[("mine", "malformed_line")] == 1
    assert drops.first_places("mine", "malformed_line") == [f"{bad}:2"]


def test_a_third_tsv_column_is_refused_or_skipped_with_a_warning(tmp_path, tokenizer, caplog):
    path = write(tmp_path / "three.tsv", "cat\ta small animal\tnoun\ndog\ta pet\n")
    source = {"name": "mine", "type": "tsv", "path": str(path)}
    with pytest.raises(DefSentError, match=r"three.tsv:1: expected 2 tab-separated columns \(entry, definition\), "
                                           r"found 3"):
        build_datasets([source], tokenizer)
    datasets = build_datasets([source], tokenizer, on_malformed="skip")
    assert list(datasets.frames["a"]["entry"]) == ["dog"]
    assert datasets.drops.counts[("mine", "extra_columns")] == 1
    assert [r.levelname for r in caplog.records if "three.tsv" in r.getMessage()] == ["WARNING"]
    assert (f"dictionary source 'mine': lines with more columns than the format's: 1 dropped (first at {path}:1)"
            in caplog.text)


def test_lines_with_an_empty_headword_or_definition_are_refused_or_warned_with_their_lines(tmp_path, tokenizer,
                                                                                           caplog):
    path = write(tmp_path / "gaps.tsv", "cat\ta pet\n\tno headword\ndog\t \n \tneither\n")
    source = {"name": "mine", "type": "tsv", "path": str(path)}
    with pytest.raises(DefSentError, match=r"gaps.tsv:2: empty entry column: expected 2 tab-separated columns"):
        build_datasets([source], tokenizer)
    datasets = build_datasets([source], tokenizer, on_malformed="skip")
    assert list(datasets.frames["a"]["entry"]) == ["cat"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"dictionary source 'mine': empty definitions: 1 dropped (first at {path}:3)",
        f"dictionary source 'mine': definitions with an empty headword: 2 dropped (first at {path}:2, {path}:4)",
    ]


def test_a_warning_names_the_first_five_places_and_counts_them_all(tmp_path, tokenizer, caplog):
    path = write(tmp_path / "many.tsv", "cat\ta pet\n" + "no tab\n" * 7)
    datasets = build_datasets([{"name": "mine", "type": "tsv", "path": str(path)}], tokenizer, on_malformed="skip")
    assert datasets.drops.counts[("mine", "malformed_line")] == 7
    places = ", ".join(f"{path}:{line}" for line in range(2, 7))
    assert f"malformed lines (too few columns, or not the format's): 7 dropped (first at {places})" in caplog.text


def test_an_empty_dataset_c_is_written_with_a_warning_and_stops_only_what_reads_it(tmp_path, minilm_path, caplog):
    path = write(tmp_path / "long.tsv", "giraffe\ta tall animal\nnew york\ta city\n")  # no single-token headword
    outputs = {name: tmp_path / f"{name}.parquet" for name in "abc"}
    stats = write_dictionary_stage([{"name": "mine", "type": "tsv", "path": str(path)}], minilm_path, outputs,
                                   tmp_path / "stats.tsv")
    reason = ("no entry of 'mine' (dataset b's source) is a single token of the tokenizer's vocabulary "
              "(dictionary.tokenizer)")
    assert f"dataset c is empty: {reason}; a run, subset or baseline that reads dataset c stops" in caplog.text
    assert len(read_dataset(outputs["a"])) == 2
    assert stats.set_index(["scope", "metric"])["value"][("dataset:c", "entries")] == 0
    with pytest.raises(DefSentError, match=re.escape(f"c.parquet: dataset has no entries: {reason}")):
        read_dataset(outputs["c"])


def test_oxford_line_with_too_few_columns(tmp_path):
    root = tmp_path / "oxford"
    shutil.copytree(FIXTURES / "oxford", root)
    write(root / "valid.txt", "lion%oxford.0\tnoun\n")
    with pytest.raises(DefSentError, match=r"valid.txt:1: expected 4 tab-separated columns \(word%oxford.N, "
                                           r"part of speech, example, definition\), found 2"):
        list(read_oxford(root, "oxford", "error", DropCounts()))


def test_non_utf8_byte_names_file_and_line(tmp_path):
    bad = write(tmp_path / "latin1.tsv", b"cat\ta pet\ncaf\xe9\ta place\n")
    with pytest.raises(DefSentError, match=r"latin1.tsv:2: not valid UTF-8 \(byte 0xe9"):
        list(read_tsv(bad, "mine", "error", DropCounts()))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"type": "tsv", "path": "/nonexistent/x.tsv"}, r"/nonexistent/x.tsv: file not found"),
        ({"type": "oxford", "path": "/nonexistent/oxford"}, r"Oxford directory not found"),
        ({"type": "gcide", "path": "/nonexistent"}, r"no GCIDE words_\*.json"),
        ({"type": "wordnet", "path": "/nonexistent"}, r"dictionary.sources\[0\].path \(wordnet\): no WordNet under "
                                                      r"/nonexistent/corpora/wordnet; set it to an nltk_data root"),
        ({"type": "webster"}, r"dictionary.sources\[0\].type: unknown source 'webster'"),
        ({"type": "tsv"}, r"dictionary.sources\[0\].path: a tsv source needs a path"),
    ],
)
def test_bad_sources_fail_with_clear_errors(tokenizer, source, message):
    with pytest.raises(DefSentError, match=message):
        build_datasets([source], tokenizer)


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ([OXFORD, {**TSV, "name": "oxford"}], r"dictionary.sources\[1\].name: source name 'oxford' is already used by "
                                              r"config: dictionary.sources\[0\]"),
        ([{"type": "tsv", "path": "x.tsv"}, {"type": "tsv", "path": "y.tsv"}],
         r"dictionary.sources\[1\].name: source name 'tsv' .* \(a name defaults to the source's type\)"),
    ],
)
def test_duplicate_source_names_name_the_config_key(sources, message):
    with pytest.raises(DefSentError, match=message):
        parse_sources(sources)


def test_gcide_file_that_is_not_json_names_file_and_line(tmp_path):
    write(tmp_path / "words_A.json", '{\n  "apple": {"pos": []},\n  "axe": {"pos": [}\n}\n')
    with pytest.raises(DefSentError, match=r"words_A.json:3: not valid GCIDE JSON: Expecting value \(column 19\)"):
        list(read_gcide(tmp_path, "gcide", "error", DropCounts()))


@pytest.mark.parametrize(("content", "message"), [
    (b'{"a": {"pos": []},\n"caf\xe9": {"pos": []}}', r"words_B.json:2: not valid UTF-8 \(byte 0xe9 at column 5\)"),
    (b'["not", "an", "object"]', r"words_B.json: expected a JSON object of entries, found list"),
])
def test_gcide_file_with_bad_bytes_or_shape(tmp_path, content, message):
    write(tmp_path / "words_B.json", content)
    with pytest.raises(DefSentError, match=message):
        list(read_gcide(tmp_path, "gcide", "error", DropCounts()))


def test_empty_source_is_an_error(tmp_path, tokenizer):
    empty = write(tmp_path / "empty.tsv", "\n\n")
    with pytest.raises(DefSentError, match="gave no definitions"):
        build_datasets([{"type": "tsv", "path": str(empty)}], tokenizer)


def test_failed_stage_leaves_no_output(tmp_path, minilm_path):
    bad = write(tmp_path / "bad.tsv", "cat\ta pet\nbroken\n")
    outputs = {k: tmp_path / "out" / f"{k}.parquet" for k in "abc"}
    with pytest.raises(DefSentError):
        write_dictionary_stage([{"type": "tsv", "path": str(bad)}], minilm_path, outputs, tmp_path / "out/stats.tsv")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_stage_writes_parquet_with_list_columns(tmp_path, minilm_path):
    outputs = {k: tmp_path / f"{k}.parquet" for k in "abc"}
    write_dictionary_stage([OXFORD, TSV], minilm_path, outputs, tmp_path / "stats.tsv")
    a = pd.read_parquet(outputs["a"])
    assert list(a.columns) == ["entry", "definitions", "sources"]
    assert list(a.loc[a.entry == "cat", "definitions"].iloc[0]) == ["a small animal kept as a pet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet", "c.parquet", "stats.tsv"]


def test_subsample_is_seeded_and_keeps_whole_entries(tokenizer):
    a = build_datasets([OXFORD, GCIDE, TSV], tokenizer).frames["a"]
    first, again = subsample_entries(a, 3, seed=1), subsample_entries(a, 3, seed=1)
    assert first.equals(again) and len(first) == 3
    assert list(first["entry"]) == sorted(first["entry"])
    merged = a.set_index("entry")
    assert all(merged.loc[e, "definitions"] == d for e, d in zip(first["entry"], first["definitions"], strict=True))


@pytest.mark.slow
def test_wordnet_reader_on_wordnet_30():
    nltk_data = REPO / "nltk_data"
    records = list(read_wordnet(nltk_data, "wordnet", "error", DropCounts()))
    lemmas = {r.entry.lower() for r in records}
    assert len(lemmas) == 147306
    giraffe = [r.text for r in records if r.entry == "giraffe"]
    assert giraffe == ["tallest living quadruped; having a spotted coat and small horns and very long neck and legs; "
                       "of savannahs of tropical Africa"]
    assert any(r.entry == "New York" for r in records)  # lower-cased later by normalise_records


def test_gcide_reader_reads_every_text_of_the_fixture_and_counts_those_without():
    expected, without_text = [], 0
    for file in sorted((FIXTURES / "gcide").glob("words_*.json")):
        for key, record in json.loads(file.read_text()).items():
            for definition in (d for pos in record["pos"] for d in pos["definitions"]):
                if isinstance(definition.get("text"), str):
                    expected.append((record.get("entry", key), definition["text"]))
                else:
                    without_text += 1
    drops = DropCounts()
    records = list(read_gcide(FIXTURES / "gcide", "gcide", "error", drops))
    assert len(expected) > 3 and [(r.entry, r.text) for r in records] == expected
    assert drops.counts.get(("gcide", "definition_without_text"), 0) == without_text


# ------------------------------------------------------------------ encodings and the reference's Ox+WN.csv


OX_WN = "giraffe\ta tall african animal<|list_more_def|>a long-necked ruminant\r\nlion\ta large cat\r\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig", "utf-8"])  # utf-16 writes a BOM, as the release has
def test_defsentplus_format_in_every_encoding(tmp_path, encoding):
    path = write(tmp_path / "Ox+WN.csv", OX_WN.encode(encoding))
    records = list(read_defsentplus(path, "oxwn", "error", DropCounts()))
    assert [(r.entry, r.text) for r in records] == [
        ("giraffe", "a tall african animal"), ("giraffe", "a long-necked ruminant"), ("lion", "a large cat")]
    assert records[2].where == f"{path}:2"


def test_defsentplus_format_errors_name_file_and_line_and_skips_are_counted(tmp_path, caplog):
    path = write(tmp_path / "Ox+WN.csv", "giraffe\ta tall animal\nno definition here\n".encode("utf-16"))
    with pytest.raises(DefSentError, match=r"Ox\+WN.csv:2: expected 2 tab-separated columns \(entry, definitions\), "
                                           r"found 1"):
        list(read_defsentplus(path, "oxwn", "error", DropCounts()))
    drops = DropCounts()
    assert len(list(read_defsentplus(path, "oxwn", "skip", drops))) == 1
    assert drops.counts[("oxwn", "malformed_line")] == 1


def test_defsentplus_source_builds_datasets_with_empty_definitions_counted(tmp_path, tiny_bert):
    path = write(tmp_path / "Ox+WN.csv", "giraffe\ta tall animal<|list_more_def|>\nlion\ta big cat\n".encode("utf-16"))
    data = build_datasets([{"name": "oxwn", "type": "defsentplus", "path": str(path)}], load_tokenizer(tiny_bert))
    frame = data.frames["a"]
    assert frame.set_index("entry")["definitions"].map(list).to_dict() == {"giraffe": ["a tall animal"],
                                                                           "lion": ["a big cat"]}
    assert sum(count for (source, _), count in data.drops.counts.items() if source == "oxwn") == 1


def test_a_byte_order_mark_never_reaches_the_first_headword(tmp_path):
    path = write(tmp_path / "excel.tsv", "\ufeffapple\ta fruit\r\npear\tanother fruit\r\n".encode("utf-8"))
    records = list(read_tsv(path, "mine", "error", DropCounts()))
    assert [(r.entry, r.text) for r in records] == [("apple", "a fruit"), ("pear", "another fruit")]


def test_oxford_with_bom_and_crlf(tmp_path):
    root = tmp_path / "oxford"
    shutil.copytree(FIXTURES / "oxford", root)
    original = list(read_oxford(root, "oxford", "error", DropCounts()))
    for split in ("train.txt", "valid.txt", "test.txt"):
        text = (root / split).read_text(encoding="utf-8")
        (root / split).write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    assert [(r.entry, r.text) for r in read_oxford(root, "oxford", "error", DropCounts())] == [
        (r.entry, r.text) for r in original]


def test_undecodable_utf16_names_file_and_line(tmp_path):
    path = write(tmp_path / "Ox+WN.csv", "a\tb\nc\td\n".encode("utf-16-le").join([b"\xff\xfe", b"\x00\xd8"]))
    with pytest.raises(DefSentError, match=r"Ox\+WN.csv:3: not valid UTF-16-LE"):
        list(read_defsentplus(path, "oxwn", "error", DropCounts()))


# ------------------------------------------------------------------ token counts straight from the fast tokenizer

TEXTS = [
    "a large african mammal with a very long neck (the tallest living animal).",
    "someone's Tall friend; a constellation.",
    "café crème, naïve façade",  # accents: stripped by an uncased WordPiece, bytes for byte-level BPE
    "漢字 and ʘʘ",  # Chinese characters split one by one; an unknown symbol
    "the [SEP] token, a [MASK] and <s> </s> <mask> written in a definition",  # special tokens inside the text
    "   spaces\tand\ttabs   ",
    "",
    "a long definition " * 150,  # longer than the 128 tokens all-MiniLM-L6-v2's tokenizer.json truncates to
    "someone's Tall friend; a constellation.",  # a repeat
]
WORDS = ["dog", "lion", "giraffe", "new york", "ʘʘ", "café", "[MASK]", "<mask>", "the", "", "Dog"]


def per_text_lengths(tokenizer, texts, add_special_tokens):
    return [len(tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"]) for text in texts]


def per_word_ids(tokenizer, words):
    unknown = {tokenizer.unk_token_id, *tokenizer.all_special_ids}
    ids = [tokenizer(f" {word}", add_special_tokens=False)["input_ids"] for word in words]
    return [t[0] if len(t) == 1 and t[0] not in unknown else None for t in ids]


@pytest.mark.parametrize("model", ["minilm_path", "tiny_bert", "tiny_roberta"])
@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_batched_token_lengths_are_those_of_one_text_at_a_time(request, model, add_special_tokens):
    tokenizer = load_tokenizer(request.getfixturevalue(model))  # fresh: no earlier call has turned truncation off
    truncation = tokenizer.backend_tokenizer.truncation
    batched = token_lengths(tokenizer, TEXTS, add_special_tokens=add_special_tokens)
    assert tokenizer.backend_tokenizer.truncation == truncation  # the tokenizer is left as it was
    assert batched == per_text_lengths(tokenizer, TEXTS, add_special_tokens)
    if model == "minilm_path":
        assert truncation is not None and batched[7] > truncation["max_length"]  # the case a copy must turn off


@pytest.mark.parametrize("model", ["minilm_path", "tiny_bert", "tiny_roberta"])
def test_batched_single_token_ids_are_those_of_one_word_at_a_time(request, model):
    tokenizer = load_tokenizer(request.getfixturevalue(model))
    found = single_token_ids(tokenizer, WORDS)
    assert found == per_word_ids(tokenizer, WORDS)
    if model == "minilm_path":
        assert [w for w, i in zip(WORDS, found, strict=True) if i is not None] == ["dog", "lion", "café", "the", "Dog"]


def test_stats_lengths_are_per_definition_token_counts(tokenizer):
    datasets = build_datasets([OXFORD, GCIDE, TSV], tokenizer)
    stats = dataset_stats(datasets, tokenizer).set_index(["scope", "metric"])["value"]
    fresh = load_tokenizer(tokenizer.name_or_path)
    for name, frame in datasets.frames.items():
        lengths = per_text_lengths(fresh, [d for defs in frame["definitions"] for d in defs], True)
        assert stats[(f"dataset:{name}", "max_length_tokens")] == max(lengths)
        assert stats[(f"dataset:{name}", "median_length_tokens")] == float(np.median(lengths))


# ----------------------------------------------------------------------------------- WordNet's data files

WORDNET_LICENCE = "  1 This software and database is being provided to you, the LICENSEE, by  \n  2 Princeton\n"
WORDNET_DATA = {
    "data.adj": [
        "00001740 00 a 01 able 0 001 ! 00002098 a 0101 | (usually followed by `to') having the necessary means; "
        '"able to swim"; "she was able"  ',
        "00003553 00 s 02 emerging(p) 0 rising(ip) 0 001 & 00003356 a 0000 | coming into existence; "
        '"an emerging land"  ',
    ],
    "data.adv": [],
    "data.noun": [
        "02084071 05 n 0a " + " ".join(f"dog_{i} {i}" for i in range(10)) + " 000 | a member of the genus Canis  ",
    ],
    "data.verb": [
        "01926311 38 v 02 run 0 scarper 1 001 @ 01835496 v 0000 01 + 02 00 | move fast by using one's feet; "
        '"Don\'t run--you\'ll be late"  ',
    ],
}


def write_wordnet(root: Path, data: dict[str, list[str]]) -> Path:
    for fileid, lines in data.items():
        write(root / "corpora" / "wordnet" / fileid, WORDNET_LICENCE + "".join(line + "\n" for line in lines))
    return root


def test_wordnet_reader_parses_data_files_as_nltk_does(tmp_path):
    records = list(read_wordnet(write_wordnet(tmp_path, WORDNET_DATA), "wordnet", "error", DropCounts()))
    assert [(r.entry, r.text) for r in records] == [
        ("able", "(usually followed by `to') having the necessary means"),  # examples and their "; " dropped
        ("emerging", "coming into existence"),  # satellites among the adjectives; syntactic markers dropped
        ("rising", "coming into existence"),
        *[(f"dog {i}", "a member of the genus Canis") for i in range(10)],  # lemma count 0a is hexadecimal
        ("run", "move fast by using one's feet"),
        ("scarper", "move fast by using one's feet"),
    ]
    assert records[0].where == f"{tmp_path / 'corpora' / 'wordnet' / 'data.adj'}:3"


def test_wordnet_line_that_is_not_a_synset_names_file_and_line_or_is_counted(tmp_path):
    no_gloss = "02084071 05 n 01 dog 0 000 a member of the genus Canis"  # no "|" before the gloss
    root = write_wordnet(tmp_path, {**WORDNET_DATA, "data.noun": [no_gloss, *WORDNET_DATA["data.noun"]]})
    with pytest.raises(DefSentError, match=r"data.noun:3: not a WordNet synset line"):
        list(read_wordnet(root, "wordnet", "error", DropCounts()))
    drops = DropCounts()
    assert len(list(read_wordnet(root, "wordnet", "skip", drops))) == 15
    assert drops.counts[("wordnet", "malformed_line")] == 1


def test_wordnet_folder_without_a_data_file(tmp_path):
    root = write_wordnet(tmp_path, {k: v for k, v in WORDNET_DATA.items() if k != "data.verb"})
    with pytest.raises(DefSentError, match=r"WordNet data file \S+/corpora/wordnet/data.verb not found; set it"):
        list(read_wordnet(root, "wordnet", "error", DropCounts()))


def test_a_relative_wordnet_path_not_found_names_the_folder_looked_in_and_the_key(tokenizer, tmp_path, monkeypatch):
    """A module's job works in its prefix folder (pipeline/snakemake_api.py): the default ``nltk_data`` is looked
    for there, and the error says where and which key to set."""
    prefix = tmp_path / "defsent"
    prefix.mkdir()
    monkeypatch.chdir(prefix)
    sources = [TSV, {"name": "wordnet", "type": "wordnet", "path": "nltk_data"}]
    with pytest.raises(DefSentError) as caught:
        build_datasets(sources, tokenizer)
    assert str(caught.value) == (
        f"config: dictionary.sources[1].path (wordnet): no WordNet under {prefix.resolve()}/nltk_data/corpora/wordnet; "
        "set it to an nltk_data root holding corpora/wordnet, or run `defsent-plus setup-wordnet --target <dir>`")


@pytest.mark.slow
def test_wordnet_reader_reads_what_nltk_reads_from_wordnet_30():
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    nltk_data = REPO / "nltk_data"
    expected = [(lemma.replace("_", " "), synset.definition()) for synset in
                WordNetCorpusReader(wordnet_root(nltk_data), None).all_synsets() for lemma in synset.lemma_names()]
    assert [(r.entry, r.text) for r in read_wordnet(nltk_data, "wordnet", "error", DropCounts())] == expected
