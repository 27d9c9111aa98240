"""Fairness metrics; each module documents its formulas next to the code."""

from blindact.fairness.metrics.bbq import bbq_table, bias_score
from blindact.fairness.metrics.flex import by_attribute, by_category, flex_scores, per_attack_asr
from blindact.fairness.metrics.records import FlexRecord, Prediction
from blindact.fairness.metrics.spillover import compare
from blindact.fairness.metrics.stereo import crows_scores, stereoset_scores

__all__ = ["FlexRecord", "Prediction", "bbq_table", "bias_score", "by_attribute", "by_category",
           "compare", "crows_scores", "flex_scores", "per_attack_asr", "stereoset_scores"]
