"""The runtime's CPU tests (tests/rt/rttests.py), found by tests/run."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rttests  # noqa: E402


def tests(root, run, fail):
    return rttests.tests(root, run, fail)
