"""The figures a benchmark measures, as JSON rows: one object per figure, beside its baseline.

Each script adds `--json PATH` to its options and, when given, writes its rows there as a JSON
list; bench/run_all.py builds bench/results.md from those files and reads no printed text.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    """One measured figure. `baseline` was measured in the same run (None: a budget, not a
    baseline); `ratio` is value / baseline unless `note` says otherwise."""

    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    ratio: float | None = None
    target: str = ""
    note: str = ""

    def line(self) -> str:
        """The figure as one human line: `name: value unit vs baseline ...; ratio r (target t)`."""
        text = f"{self.name}: {self.value:,.0f} {self.unit}"
        if self.baseline is not None:
            text += f" vs baseline {self.baseline:,.0f} {self.unit}"
        if self.ratio is not None:
            text += f"; ratio {self.ratio:.2f}"
        return text + (f" (target {self.target})" if self.target else "")


def versus(
    name: str,
    value: float,
    baseline: float,
    unit: str,
    baseline_name: str,
    target: str,
    note: str = "",
) -> Figure:
    """A figure beside its baseline, with their ratio."""
    return Figure(name, value, unit, baseline, baseline_name, value / baseline, target, note)


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the figures there")


def command() -> str:
    """The command line that ran this benchmark, without `--json PATH`."""
    args = sys.argv[1:]
    if "--json" in args:
        at = args.index("--json")
        args = args[:at] + args[at + 2 :]
    script = Path(sys.argv[0])
    return shlex.join(["python", f"bench/{script.name}", *args])


def write(path: Path | None, figures: list[Figure]) -> None:
    """`figures` as JSON rows at `path` (nothing when None), each with its benchmark and command."""
    if path is None:
        return
    benchmark, run = Path(sys.argv[0]).stem, command()
    rows = [{"benchmark": benchmark, **asdict(figure), "command": run} for figure in figures]
    path.write_text(json.dumps(rows, indent=1) + "\n")


def read(path: Path) -> list[dict[str, object]]:
    rows = json.loads(path.read_text())
    assert isinstance(rows, list)
    return rows
