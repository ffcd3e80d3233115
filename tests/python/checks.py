"""How the Python test scripts check: one line per check (`ok` or `FAILED` with what was found instead), the failures
kept for the script's exit status (`sys.exit(1 if failures else 0)`). Imported from the script's own directory."""
failures = []


def check(what, ok, detail=""):
    print(("ok      " if ok else "FAILED  ") + what + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)
