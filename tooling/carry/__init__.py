"""carry: keep carried patch series alive on top of a moving upstream."""

__version__ = "0.1.0"
