"""Names shared by dev scoring and best-checkpoint selection (STS-B dev, never a test set)."""

DEV_TASK = "STSB-dev"
