#!/usr/bin/env python3
"""Validates JSON files against infdoctor's schema: validate_json.py SCHEMA FILE... Prints each
error with its path; exit 1 when any file is invalid, 2 when the schema itself is."""
import json
import sys

import jsonschema


def main() -> int:
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        print(f"schema: {e.message}")
        return 2
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    for path in sys.argv[2:]:
        with open(path) as f:
            doc = json.load(f)
        # oneOf hides the reason; the document's own "schema" field says which branch it claims.
        kind = {"infdoctor.results/1": "results", "infdoctor.probe/1": "probe"}.get(doc.get("schema"))
        target = {"$ref": f"#/$defs/{kind}", "$defs": schema["$defs"]} if kind else schema
        errors = list(jsonschema.Draft202012Validator(target).iter_errors(doc)) if kind else list(validator.iter_errors(doc))
        for e in errors[:20]:
            print(f"{path}: {'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message[:300]}")
        bad += bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
