"""All numbers in one place: confidence levels, combining findings, the symptom prior, ranking."""

from __future__ import annotations

from collections.abc import Sequence

CONFIDENCE = {"hint": 0.15, "low": 0.3, "medium": 0.6, "high": 0.85}
ALTERNATIVE_FACTOR = 0.3  # an alternative cause scores this share of the finding it comes with
EXPERIMENTAL_FACTOR = 0.9
# --symptom is a prior: causes of other symptoms are damped, strong (high) evidence much less
OFF_SYMPTOM_FACTOR = {"hint": 0.4, "low": 0.4, "medium": 0.55, "high": 0.9}
MAX_SCORE = 0.99
PRIOR_CAP = 0.3  # a cause only a symptom implies (runbook symptom table) stays at low confidence


def finding_score(confidence: str, experimental: bool = False) -> float:
    """Score of one rule outcome."""
    base = CONFIDENCE[confidence]
    return base * EXPERIMENTAL_FACTOR if experimental else base


def alternative_score(confidence: str) -> float:
    """Score of a cause a rule names as an alternative to its conclusion."""
    return round(CONFIDENCE[confidence] * ALTERNATIVE_FACTOR, 4)


def combine(scores: Sequence[float]) -> float:
    """Several independent findings for one cause: noisy-OR, capped below certainty."""
    miss = 1.0
    for s in scores:
        miss *= 1.0 - s
    return round(min(MAX_SCORE, 1.0 - miss), 4)


def apply_prior(score: float, best_confidence: str, symptoms: set[str], told: set[str]) -> float:
    """Damp causes that explain none of the symptoms the user reported."""
    if not told or symptoms & told:
        return score
    return round(score * OFF_SYMPTOM_FACTOR[best_confidence], 4)


def cap_prior(score: float) -> float:
    """Score of a cause that no evidence backs, only a symptom: never above low confidence."""
    return round(min(score, PRIOR_CAP), 4)


def confidence_of(score: float) -> str:
    """Confidence level shown for a combined score."""
    if score >= 0.75:
        return "high"
    if score >= 0.45:
        return "medium"
    return "low"
