#!/usr/bin/env python3
"""Prints a one-line summary of a `meson test` run: "N passed, N failed".

Counts GoogleTest cases (from the XML each gtest-protocol test writes into
the build directory) rather than test executables, and counts a test that
crashed or timed out without reporting failed cases as one failure. Skipped
cases are reported separately and count as neither.

Usage: test_summary.py BUILD_DIR
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def gtest_counts(path):
    """(passed, failed, skipped) from a gtest XML report, or None."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        if case.find("failure") is not None:
            failed += 1
        elif case.get("result") == "skipped" or case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    log = os.path.join(build, "meson-logs", "testlog.json")
    passed = failed = skipped = 0
    failures = []
    with open(log) as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            name, result = t["name"], t["result"]
            # Meson runs gtest-protocol tests with --gtest_output=xml:BUILD/NAME.xml.
            counts = gtest_counts(os.path.join(build, name.split(" / ")[-1] + ".xml"))
            if counts is not None:
                p, fl, s = counts
                passed, skipped = passed + p, skipped + s
                if fl == 0 and result not in ("OK", "SKIP", "EXPECTEDFAIL"):
                    fl = 1  # crashed or timed out without reporting a failed case
                failed += fl
            elif result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
            if result not in ("OK", "SKIP", "EXPECTEDFAIL"):
                failures.append(f"{name} ({result})")
    for name in failures:
        print(f"FAILED: {name}")
    if skipped:
        print(f"{skipped} skipped")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
