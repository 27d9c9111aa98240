"""Whether the judges behind the report's judge-based columns passed `blindact judge calibrate`: a
column is "calibrated" only when every judge whose verdicts fill it passed the gate for that field,
with the same rubric version and evidence options, on the reference set as it is now."""

from __future__ import annotations

from blindact.judging.calibration import calibration_for, summary
from blindact.report.data import Dataset

COLUMNS = {"bgd_intention": "BGD (judge)", "bgd_completion": "completion (judge)",
           "over_refusal": "over-refusal (judge)"}


def judge_calibration(data: Dataset) -> dict[str, dict]:
    """{field: {"column", "calibrated", "judges": [{"judge", "calibrated", "figures"}]}}; empty when nothing
    was judged."""
    keys = sorted({e["judge_key"] for e in data.episodes if e["judged"]})
    if not keys:
        return {}
    out = {}
    for field, column in COLUMNS.items():
        judges = []
        for judge, rubric_version, options in keys:
            ok, text = summary(calibration_for(judge, rubric_version, options), field)
            judges.append({"judge": judge, "calibrated": ok, "figures": text})
        out[field] = {"column": column, "calibrated": all(j["calibrated"] for j in judges), "judges": judges}
    return out


def calibration_lines(calibration: dict[str, dict]) -> list[str]:
    """One plain line per judge-based column, for the terminal."""
    return [f"{c['column']}: {'calibrated' if j['calibrated'] else 'uncalibrated'} ({j['judge']}: {j['figures']})"
            for c in calibration.values() for j in c["judges"]]
