"""Regenerate dcpinspect/families/mcbp/_lane_rules.h, the fast lane's checks as C, from their declarations
(see dcpinspect/families/mcbp/lane_rules.py); then rebuild the module."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dcpinspect.families.mcbp.lane_rules import HEADER, write  # noqa: E402

if write():
    print(f"{HEADER.name}: written; rebuild the module (pip install -e . or python setup.py build_ext --inplace)")
else:
    print(f"{HEADER.name}: up to date")
