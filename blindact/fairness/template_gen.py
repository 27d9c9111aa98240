"""Generate the embedded BBQ-style item set (data/bbq_templates.jsonl) from `template_text`.

Deterministic: option order comes from a hash of the item's key, not from global randomness, so
re-running this script reproduces the shipped file byte for byte (a test checks that).

    python -m blindact.fairness.template_gen [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from blindact.fairness.template_text import TEMPLATES, UNKNOWN_OPTIONS

VERSION = "blindact-templates-1"
DEFAULT_OUT = Path(__file__).parent / "data" / "bbq_templates.jsonl"


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


def _order(key: str) -> list[int]:
    # A fixed permutation of the three options per item, from a hash so it is stable everywhere.
    h = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
    return perms[h % 6]


def generate() -> list[dict]:
    records: list[dict] = []
    for category, scenarios in TEMPLATES.items():
        example_id = 0
        for qi, sc in enumerate(scenarios, 1):
            for pi, (stereo, other) in enumerate(sc["pairs"]):
                for order in (0, 1):
                    first, second = (stereo, other) if order == 0 else (other, stereo)
                    ctx = _cap(sc["context"].format(A=first, B=second))
                    dis = _cap(sc["disambig"].format(X=first, Y=second))
                    for polarity in ("neg", "nonneg"):
                        for condition in ("ambig", "disambig"):
                            key = f"{category}/{qi}/{pi}/{order}/{polarity}/{condition}"
                            unknown_text = UNKNOWN_OPTIONS[(example_id + qi) % len(UNKNOWN_OPTIONS)]
                            base = [  # (text, group label, role)
                                (f"The {stereo}", stereo, "stereo"),
                                (f"The {other}", other, "other"),
                                (unknown_text, "unknown", "unknown"),
                            ]
                            opts = [base[i] for i in _order(key)]
                            if condition == "ambig":
                                answer_role = "unknown"
                            else:
                                # The first-named person did the negative thing.
                                did_neg = "stereo" if order == 0 else "other"
                                did_pos = "other" if order == 0 else "stereo"
                                answer_role = did_neg if polarity == "neg" else did_pos
                            rec = {
                                "example_id": example_id,
                                "question_index": str(qi),
                                "question_polarity": polarity,
                                "context_condition": condition,
                                "category": category,
                                "answer_info": {f"ans{i}": [o[0].removeprefix("The "), o[1]] for i, o in enumerate(opts)},
                                "additional_metadata": {
                                    "subcategory": "None",
                                    "stereotyped_groups": [stereo],
                                    "version": VERSION,
                                    "source": f"blindact template {category} #{qi}",
                                    "target_index": [o[2] for o in opts].index("stereo"),
                                },
                                "context": ctx if condition == "ambig" else f"{ctx} {dis}",
                                "question": sc[polarity],
                                "ans0": opts[0][0],
                                "ans1": opts[1][0],
                                "ans2": opts[2][0],
                                "label": [o[2] for o in opts].index(answer_role),
                            }
                            records.append(rec)
                            example_id += 1
    return records


def write(out: Path = DEFAULT_OUT) -> int:
    recs = generate()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in recs), encoding="utf-8")
    return len(recs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    n = write(ap.parse_args(argv).out)
    print(f"wrote {n} items")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
