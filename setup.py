"""A built ctxlamp ships o200k's parsed table in resources/, so a user's very first run
counts tokens at once instead of parsing tiktoken's file and writing the table first.
Everything else about the package is in pyproject.toml."""
import sys
import warnings
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


# `make run` installs the checkout editable, and setuptools then prints a box warning that folders named like
# a package in the current folder may shadow it; ctxlamp's own processes never import from the current
# folder (service/client/own_python.py), so the box only alarms a newcomer.
warnings.filterwarnings("ignore", message="Editable installation")


class BuildPyWithTable(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads resources/ in the tree; `make` builds the table there
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from service.engine_setup.tokenizer import FAST_NAME, build_shipped_table

        build_shipped_table(Path(self.build_lib) / "resources" / FAST_NAME)


setup(cmdclass={"build_py": BuildPyWithTable})
