"""Loaders for BBQ, CrowS-Pairs and StereoSet in their original formats, and our embedded item set."""

from blindact.fairness.datasets.bbq import load_bbq
from blindact.fairness.datasets.crows import load_crows_pairs
from blindact.fairness.datasets.stereoset import load_stereoset
from blindact.fairness.datasets.wheel import WheelUnavailable, ensure_wheel

__all__ = ["load_bbq", "load_crows_pairs", "load_stereoset", "ensure_wheel", "WheelUnavailable"]
