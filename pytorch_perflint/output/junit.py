"""``junit``: a JUnit XML report, one test suite per file and one failing test case per
finding, shaped as ruff's ``junit`` output so CI test-report viewers (GitLab, Jenkins,
Azure) list findings next to test failures. A clean run is one passing test case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from pathlib import Path, PurePosixPath
from typing import Optional, Sequence, TextIO

from ..types import FileResult
from .common import entries, level, relative_to_root

PROGRAM = "pytorch-perflint"
PACKAGE = f"org.{PROGRAM}"


def _path(path: Path, root: Optional[Path]) -> str:
    rel = relative_to_root(path, root)
    return rel if rel is not None else path.as_posix()


def report(results: Sequence[FileResult], root: Optional[Path]) -> ET.Element:
    """The ``<testsuites>`` element of a run."""
    found = entries(results)
    suites = ET.Element("testsuites", name=PROGRAM, tests=str(max(1, len(found))), failures=str(len(found)), errors="0")
    if not found:
        suite = ET.SubElement(suites, "testsuite", name=PROGRAM, tests="1", disabled="0", errors="0", failures="0", package=PACKAGE)
        ET.SubElement(suite, "testcase", name="No errors found", classname=PROGRAM)
        return suites
    for path, group in groupby(found, key=lambda entry: _path(entry.diagnostic.path, root)):
        cases = list(group)
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=path,
            tests=str(len(cases)),
            disabled="0",
            errors="0",
            failures=str(len(cases)),
            package=PACKAGE,
        )
        classname = str(PurePosixPath(path).with_suffix(""))
        for entry in cases:
            d = entry.diagnostic
            start = d.location
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{PACKAGE}.{d.code}",
                classname=classname,
                line=str(start.row),
                column=str(start.column),
            )
            properties = ET.SubElement(case, "properties")
            ET.SubElement(properties, "property", name="severity", value=level(d.code))
            if d.cell is not None:
                ET.SubElement(properties, "property", name="cell", value=str(d.cell))
            failure = ET.SubElement(case, "failure", message=d.message)
            where = f"cell {d.cell}, " if d.cell is not None else ""
            failure.text = f"{where}line {start.row}, col {start.column}, {d.message}"
    return suites


def write(results: Sequence[FileResult], stream: TextIO, *, root: Optional[Path]) -> None:
    tree = report(results, root)
    ET.indent(tree, space="    ")
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(tree, encoding="unicode"))
    stream.write("\n")
