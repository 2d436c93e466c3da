"""The tests/hf harness (sections printing `key value` lines) for the ecosystem scripts in this folder."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hf"))

from common import emit, main, section  # noqa: E402,F401
