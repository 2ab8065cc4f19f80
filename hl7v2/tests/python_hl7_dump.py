"""Prints, for each HL7v2 file named on the command line, every value python-hl7 reports.

Output: one JSON object per file, {"file": name, "leaves": [[path, value], ...]} with paths in
keelson-hl7v2's grammar (SEG[occurrence]-field[repetition].component.subcomponent, bracketed
indexes 0-based). MSH-1 and MSH-2 are left out: python-hl7 keeps them literally, as we do.
Used by tests/it/python_hl7.rs as a differential oracle.
"""

import json
import os
import sys

import hl7


def leaves(node, coords, out):
    """Walks python-hl7's nesting (field, repetition, component, subcomponent) to its strings."""
    if isinstance(node, str):
        out.append(coords + [1] * (3 - len(coords)) + [node])
        return
    for index, child in enumerate(node, start=1):
        leaves(child, coords + [index], out)


def dump(path):
    with open(path, encoding="utf-8-sig", newline="") as file:
        text = file.read()
    lines = [line for line in text.replace("\r\n", "\r").replace("\n", "\r").split("\r") if line.strip()]
    message = hl7.parse("\r".join(lines))
    seen = {}
    result = []
    for segment in message:
        segment_id = str(segment[0])
        occurrence = seen.get(segment_id, 0)
        seen[segment_id] = occurrence + 1
        first = 3 if segment_id == "MSH" else 1
        for number in range(first, len(segment)):
            found = []
            leaves(segment[number], [], found)
            for repetition, component, subcomponent, value in found:
                result.append(
                    [f"{segment_id}[{occurrence}]-{number}[{repetition - 1}].{component}.{subcomponent}", value]
                )
    return {"file": os.path.basename(path), "leaves": result}


for name in sys.argv[1:]:
    print(json.dumps(dump(name)))
