"""The schema: migrations, version handling, file safety, and the models matching the tables."""
from __future__ import annotations

import subprocess
import sys


from tests.support.corpus import ROOT


def test_models_import_nothing_of_ours():
    code = ("import sys, models, models.migrations; "
            "models.migrations.load_migrations(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'service', 'desktop', 'resources'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
