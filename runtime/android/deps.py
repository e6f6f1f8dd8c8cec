#!/usr/bin/env python3
"""deps.py — the jars of runtime/android/pom.xml in the local directory.

    deps.py check POM DIR   exit 0 when DIR holds <artifactId>-<version>.jar
                            for every dependency POM names (its direct ones;
                            Maven's copy-dependencies also puts their
                            dependencies there), else print what is missing
                            and exit 1

Used by scripts/install-deps (skip the fetch when all are there) and
scripts/check-deps (fail when they are not).
"""
import os
import sys
import xml.etree.ElementTree as ET

NS = "{http://maven.apache.org/POM/4.0.0}"


def wanted(pom):
    root = ET.parse(pom).getroot()
    out = []
    for d in root.iter(NS + "dependency"):
        a = d.find(NS + "artifactId").text.strip()
        v = d.find(NS + "version").text.strip()
        out.append(f"{a}-{v}.jar")
    return out


def main(argv):
    if len(argv) != 4 or argv[1] != "check":
        print("usage: deps.py check POM DIR", file=sys.stderr)
        return 2
    missing = [j for j in wanted(argv[2]) if not os.path.isfile(os.path.join(argv[3], j))]
    for j in missing:
        print(f"{argv[3]}/{j}: missing (scripts/install-deps fetches it)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
