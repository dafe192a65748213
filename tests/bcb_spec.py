"""The BCB Pix API specification, read from the team's shared reference (never vendored).

Set ``PIXRECON_BCB_SPEC`` to its path; by default it is looked up in
``../shared/reference/`` beside the repository.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import service_missing

SPEC_NAME = "bacen-pix-api-2.9.0.openapi.yaml"


@functools.cache
def bcb_spec() -> dict[str, Any]:
    configured = os.environ.get("PIXRECON_BCB_SPEC")
    repo = Path(__file__).resolve().parents[1]
    path = Path(configured) if configured else repo.parent / "shared" / "reference" / SPEC_NAME
    if not path.is_file():
        service_missing("the BCB Pix API specification", f"{path} not found")
    spec: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return spec
