"""Where the repository is: the one definition every test and helper module imports."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
