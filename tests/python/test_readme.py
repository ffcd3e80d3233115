"""Every example of the README, run as a reader would run it from the clone after the quick start (in a scratch
directory holding build/example.sqlite, build/nsystrace.so and sql/), its output compared with what the README
shows. A fenced block is one of:
  ```console   `$ command` lines (a line ending in a backslash, or an open quote, goes on), each followed by the
               output it prints (stdout and stderr), compared line by line (trailing blanks and the seconds of
               "in 0.0 s" aside);
  ```python    run with this Python; it prints the lines its `# prints: …` comments say;
  ```sh        the quick start only: exactly examples/quickstart.sh and tests/run_all.sh (which CI's .ci/run runs);
  ```c, ```js, ```go, ```rust, ```java, ```r, ```ruby, ```perl, ```tcl   lines of a program in examples/languages/,
               which the languages.* tests run;
any other block is a failure (an example nobody runs). The links into docs/ lead to files, and each page of docs/
has a table of contents whose links are its headings.

  test_readme.py SOURCE_DIR SCRATCH_DIR
"""
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys

import nsystrace
from checks import check, failures  # tests/python/checks.py, beside this script

src, tmp = sys.argv[1], os.path.abspath(sys.argv[2])
# The clone after the quick start, as far as the examples see it.
work = os.path.join(tmp, "readme")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(os.path.join(work, "build"))
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    sqlite3.connect(os.path.join(work, "build", "example.sqlite")).executescript(f.read())
os.symlink(nsystrace.loadable_path() + ".so", os.path.join(work, "build", "nsystrace.so"))
os.symlink(os.path.join(src, "sql"), os.path.join(work, "sql"))
env = {**os.environ, "PATH": os.path.dirname(sys.executable) + ":" + os.environ["PATH"]}

with open(os.path.join(src, "README.md")) as f:
    readme = f.read()
blocks = re.findall(r"^```([a-z]*)\n(.*?)^```$", readme, re.S | re.M)


def normalized(text):
    lines = [re.sub(r" in [0-9]+\.[0-9] s\b", " in X s", line.rstrip()) for line in text.rstrip("\n").split("\n")]
    return lines if text.strip() else []


def commands_of(block):
    """[(command, expected output lines)] of a console block."""
    out, lines, i = [], block.rstrip("\n").split("\n"), 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            out.append((None, lines[i]))  # output before any command: a malformed example
            i += 1
            continue
        command = lines[i][2:]
        while True:
            incomplete = command.endswith("\\")
            if not incomplete:
                try:
                    shlex.split(command)
                except ValueError:
                    incomplete = True
            if not incomplete or i + 1 >= len(lines):
                break
            i += 1
            command += "\n" + lines[i]
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        out.append((command, "\n".join(expected)))
    return out


# The fenced blocks of "From your language" and the directory of examples/languages/ each is taken from.
LANGUAGE_EXAMPLES = {"c": "c", "js": "node", "go": "go", "rust": "rust", "java": "java", "r": "r", "ruby": "ruby",
                     "perl": "perl", "tcl": "tcl"}
ran = 0
for lang, block in blocks:
    if lang == "console":
        for command, expected in commands_of(block):
            if command is None:
                check("a console block starts with a `$ ` command", False, expected)
                continue
            r = subprocess.run(["bash", "-c", command], cwd=work, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            ran += 1
            shown = command.split("\n")[0][:90]
            status = 2 if "Nothing was written" in expected else 0  # the one example of a refused choice
            check(f"README: $ {shown}", r.returncode == status and normalized(r.stdout) == normalized(expected),
                  f"exit {r.returncode}\n{r.stdout}\nexpected:\n{expected}")
    elif lang == "python":
        prints = [m for m in re.findall(r"^# prints: (.*)$", block, re.M)]
        r = subprocess.run([sys.executable, "-c", block], cwd=work, env=env, capture_output=True, text=True)
        ran += 1
        check(f"README: the Python example ({block.splitlines()[-2][:60]}…)",
              r.returncode == 0 and r.stdout.rstrip("\n").split("\n") == prints, r.stdout + r.stderr)
    elif lang == "sh":
        lines = block.strip().split("\n")
        with open(os.path.join(src, ".ci", "run")) as f:
            ci = [line.strip() for line in f if line.strip() and not line.startswith("#")]
        check("README: the quick start is two commands, the example job and the test suite CI runs",
              lines == ["examples/quickstart.sh", "tests/run_all.sh"] and
              all(os.access(os.path.join(src, c), os.X_OK) for c in lines) and ci[-1] == "tests/run_all.sh",
              f"{lines} / CI ends with {ci[-1:]}")
    elif lang in LANGUAGE_EXAMPLES:
        # "From your language": the lines as they stand in examples/languages/<dir>/, which ctest languages.<dir>
        # runs (tests/languages/run_language.py), indentation aside.
        directory = os.path.join(src, "examples", "languages", LANGUAGE_EXAMPLES[lang])
        snippet = [line.strip() for line in block.strip("\n").split("\n")]
        found = []
        for root, dirs, names in os.walk(directory):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "target")]  # installed, built
            for name in names:
                with open(os.path.join(root, name), errors="replace") as f:
                    program = [line.strip() for line in f]
                if any(program[i:i + len(snippet)] == snippet for i in range(len(program))):
                    found.append(os.path.relpath(os.path.join(root, name), src))
        with open(os.path.join(src, "tests", "languages", "languages.cmake")) as f:
            tested = re.search(rf"foreach\(lang [^)]*\b{LANGUAGE_EXAMPLES[lang]}\b", f.read())
        check(f"README: the ```{lang} snippet is in examples/languages/{LANGUAGE_EXAMPLES[lang]}/, which "
              f"languages.{LANGUAGE_EXAMPLES[lang]} runs", bool(found) and bool(tested), block[:300])
        ran += 1
    else:
        check(f"README: a ```{lang} block is an example the test runs", False, block[:200])
check("README: the examples ran", ran >= 10, str(ran))

# Links into docs/, and each page's table of contents.
for target in sorted(set(re.findall(r"\]\((docs/[^)#]+)", readme))):
    check(f"README links {target}, which exists", os.path.exists(os.path.join(src, target)))


def anchor(heading, seen):
    a = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
    n = seen.get(a, 0)
    seen[a] = n + 1
    return a if n == 0 else f"{a}-{n}"


for name in sorted(os.listdir(os.path.join(src, "docs"))):
    if not name.endswith(".md"):
        continue
    with open(os.path.join(src, "docs", name)) as f:
        text = re.sub(r"^```.*?^```$", "", f.read(), flags=re.S | re.M)
    seen = {}
    headings = [m.group(1) for m in re.finditer(r"^#{2,4} (.*)$", text, re.M) if m.group(1) != "Contents"]
    anchors = [anchor(h, seen) for h in headings]
    toc = re.search(r"^## Contents\n\n((?:\s*- \[.*\n)+)", text, re.M)
    linked = re.findall(r"\]\(#([^)]+)\)", toc.group(1)) if toc else []
    check(f"docs/{name} has a table of contents of its headings", toc is not None and linked == anchors,
          f"{linked} vs {anchors}")

print(f"test_readme: {len(failures)} failed")
sys.exit(1 if failures else 0)
