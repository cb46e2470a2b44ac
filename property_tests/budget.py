"""How much each property runs: ``ci`` (default) keeps ``make test`` fast, ``nightly``
(``HYPOTHESIS_PROFILE=nightly``) runs many examples; ``LANCENB_FUZZ_EXAMPLES=N`` and
``LANCENB_FUZZ_MUTATIONS=N`` and ``LANCENB_FUZZ_DATASETS=N`` override the counts."""

import os

from hypothesis import HealthCheck, settings

NIGHTLY = os.environ.get("HYPOTHESIS_PROFILE") == "nightly"
EXAMPLES = int(os.environ.get("LANCENB_FUZZ_EXAMPLES") or (2500 if NIGHTLY else 25))
MUTATIONS = int(os.environ.get("LANCENB_FUZZ_MUTATIONS") or (25000 if NIGHTLY else 150))
# whole datasets with damaged metadata (property_tests/corrupt_dataset.py)
DATASET_MUTATIONS = int(os.environ.get("LANCENB_FUZZ_DATASETS") or (5000 if NIGHTLY else 200))


def fuzz_settings(examples: int = EXAMPLES, **kw):
    """``@settings`` for a property: the budget, no deadline, slow data allowed."""
    return settings(max_examples=examples, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much], **kw)
