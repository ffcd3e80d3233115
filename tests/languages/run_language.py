"""Runs examples/languages/<lang>/ as a user would, from a clone after the quick start, and checks what it prints
against the sqlite3 shell's answers to the same queries (docs/languages.md):

  1. the events per kind, 2. sql/top_kernels.sql's rows, 4. the NVTX ranges named "forward": every row, each value
     equal to the shell's (text exactly; numbers to the shell's 15 significant digits, since each language prints a
     double its own way: 24.0, 24, 2.4e1);
  3. the Perfetto trace of GPU 0's kernels: the bytes the program printed are the file's size and the shell's
     answer, and the file is byte-identical to the shell's trace of the same rows.

It prints the host's sqlite_version(). A language whose toolchain is not installed is skipped (exit 77) with what
is missing; a toolchain that is installed but fails is a failure.

  run_language.py LANG SQLITE3_SHELL NSYSTRACE_SO SOURCE_DIR BUILD_DIR
"""
import filecmp
import glob
import os
import shutil
import signal
import subprocess
import sys

SKIP = 77
lang, sqlite3_shell, extension, src, build = sys.argv[1:6]
example = os.path.join(src, "examples", "languages", lang)
work = os.path.join(os.path.abspath(build), "languages", lang)  # the language's cached builds
scratch = os.path.join(work, "clone")  # what the program sees as the clone: build/, sql/
install_hint = ("install it with examples/quickstart.sh (its language toolchains: apt-get install "
                "--no-install-recommends {}), see docs/languages.md")

# The queries each program runs (the same text as in the programs); the shell answers them in list mode.
KINDS = "select kind, count(*) from trace_events group by kind order by kind"
TRACE = "select perfetto_trace_file(?) from trace_events where kind = 'kernel' and device_id = 0"
NVTX = ("select pid, count(*) as ranges, sum(kernels) as kernels, sum(gpu_busy_time) as gpu_busy_ns,"
        " sum(gpu_span) as gpu_span_ns from nvtx_kernel_ranges where name = ? group by pid order by pid")


def skip(why):
    print(f"SKIPPED: languages.{lang}: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAILED: languages.{lang}: {why}")
    sys.exit(1)


def run(cmd, cwd, env=None, what=None):
    r = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        fail(f"{what or ' '.join(cmd)} {exit_status(r.returncode)}:\n{r.stdout[-4000:]}")
    return r.stdout


def exit_status(code):
    """'exited 1', or 'was killed by SIGSEGV' (a crash in the extension shows as a signal)."""
    return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited {code}"


def need(program, packages):
    path = shutil.which(program) if not os.path.isabs(program) else (program if os.path.exists(program) else None)
    if not path:
        skip(f"{program} is not installed; " + install_hint.format(packages))
    return path


def need_file(path, packages):
    if not os.path.exists(path):
        skip(f"{path} is missing; " + install_hint.format(packages))


# How each language builds (cached under BUILD_DIR/languages/<lang>) and runs its program; each returns the
# command that runs the program from the scratch clone, and its environment.
def c():
    cc = need("cc", "gcc libsqlite3-dev")
    need_file("/usr/include/sqlite3.h", "libsqlite3-dev")
    binary = os.path.join(work, "nsystrace_example_c")
    run([cc, "-Wall", "-Wextra", "-Werror", os.path.join(example, "nsystrace_example.c"), "-lsqlite3", "-o", binary],
        work)
    return [binary], {}


def python():
    need("/usr/bin/python3", "python3")
    return ["/usr/bin/python3", os.path.join(example, "nsystrace_example.py")], {}


def node():
    node_bin = need("node", "nodejs npm")
    npm = need("npm", "nodejs npm")
    # better-sqlite3 is built from source against the installed Node's headers (Debian: /usr/include/node).
    nodedir = os.path.dirname(os.path.dirname(os.path.realpath(node_bin)))
    need_file(os.path.join(nodedir, "include", "node", "node.h"), "nodejs (its headers)")
    modules = os.path.join(work, "npm")
    stamp = os.path.join(modules, "package-lock.json.installed")
    lock = os.path.join(example, "package-lock.json")
    addon = os.path.join(modules, "node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node")
    if not (os.path.exists(addon) and os.path.exists(stamp) and filecmp.cmp(lock, stamp, shallow=False)):
        os.makedirs(modules, exist_ok=True)
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(example, f), modules)
        # No prebuilt download: prebuild-install is told to build from source, node-gyp uses the local headers.
        # CFLAGS/CXXFLAGS come last on node-gyp's compile lines: -O0 overrides the package's -O3, which made the
        # bundled sqlite3.c alone minutes of a 2-core CI (the example's few queries need no optimizer).
        run([npm, "ci", "--no-audit", "--no-fund", "--build-from-source"], modules,
            {"npm_config_nodedir": nodedir, "npm_config_build_from_source": "true", "JOBS": "2",
             "CFLAGS": "-O0", "CXXFLAGS": "-O0"},
            "npm ci (better-sqlite3 from source)")
        compiled = os.path.join(modules, "node_modules", "better-sqlite3", "build", "Release", "obj.target",
                                "better_sqlite3", "src", "better_sqlite3.o")
        if not os.path.exists(compiled):
            fail("npm ci did not compile better-sqlite3 (a prebuilt binary?): no " + compiled)
        shutil.copy(lock, stamp)
    return [node_bin, os.path.join(example, "nsystrace_example.js")], \
        {"NODE_PATH": os.path.join(modules, "node_modules")}


def go():
    go_bin = need("go", "golang-go golang-github-mattn-go-sqlite3-dev")
    gopath = "/usr/share/gocode"
    need_file(os.path.join(gopath, "src", "github.com", "mattn", "go-sqlite3"), "golang-github-mattn-go-sqlite3-dev")
    binary = os.path.join(work, "nsystrace_example_go")
    # GOPATH mode over Debian's Go packages; the libsqlite3 tag links the system SQLite (the build cache is kept).
    run([go_bin, "build", "-tags", "libsqlite3", "-o", binary, os.path.join(example, "nsystrace_example.go")], work,
        {"GO111MODULE": "off", "GOPATH": gopath, "GOCACHE": os.path.join(work, "gocache"), "GOFLAGS": ""})
    return [binary], {}


def rust():
    cargo = need("/usr/bin/cargo", "cargo rustc librust-rusqlite-dev")  # Debian's, with its offline registry
    if not glob.glob("/usr/share/cargo/registry/rusqlite-*"):
        skip("rusqlite is not in /usr/share/cargo/registry; " + install_hint.format("librust-rusqlite-dev"))
    # Built in a copy (mtimes kept, so cargo rebuilds only what changed) so that its Cargo.lock stays out of the
    # clone; the copy's .cargo/config.toml points cargo at /usr/share/cargo/registry.
    crate = os.path.join(work, "crate")
    shutil.copytree(example, crate, dirs_exist_ok=True)
    target = os.path.join(work, "target")
    run([cargo, "build", "--offline", "--quiet", "--target-dir", target], crate,
        {"RUSTC": "/usr/bin/rustc", "CARGO_HOME": os.path.join(work, "cargo-home")}, "cargo build")
    return [os.path.join(target, "debug", "nsystrace_example")], {}


def java():
    java_bin = need("java", "default-jdk-headless libxerial-sqlite-jdbc-java")
    javac = need("javac", "default-jdk-headless")
    jar = "/usr/share/java/sqlite-jdbc.jar"
    need_file(jar, "libxerial-sqlite-jdbc-java")
    # Compiled once into the build directory (a user may also run the source file directly: docs/languages.md).
    source = os.path.join(example, "NsystraceExample.java")
    classes = os.path.join(work, "classes")
    compiled = os.path.join(classes, "NsystraceExample.class")
    if not os.path.exists(compiled) or os.path.getmtime(compiled) < os.path.getmtime(source):
        run([javac, "-cp", jar, "-d", classes, source], work)
    return [java_bin, "-cp", jar + ":" + classes, "NsystraceExample"], {}


def r():
    rscript = need("Rscript", "r-base-core r-cran-rsqlite")
    return [rscript, os.path.join(example, "nsystrace_example.R")], {}


def ruby():
    ruby_bin = need("ruby", "ruby ruby-sqlite3")
    return [ruby_bin, os.path.join(example, "nsystrace_example.rb")], {}


def perl():
    perl_bin = need("/usr/bin/perl", "perl libdbd-sqlite3-perl")
    return [perl_bin, os.path.join(example, "nsystrace_example.pl")], {}


def tcl():
    tclsh = need("tclsh", "tcl libsqlite3-tcl")
    return [tclsh, os.path.join(example, "nsystrace_example.tcl")], {}


LANGUAGES = {"c": c, "python": python, "node": node, "go": go, "rust": rust, "java": java, "r": r, "ruby": ruby,
             "perl": perl, "tcl": tcl}
if lang not in LANGUAGES:
    fail(f"no such language (one of {', '.join(LANGUAGES)})")

# The clone as the program sees it: build/example.sqlite (made as the quick start makes it), build/nsystrace.so,
# sql/.
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(os.path.join(scratch, "build"))
with open(os.path.join(src, "examples", "example_profile.sql")) as f:
    subprocess.run([sqlite3_shell, os.path.join(scratch, "build", "example.sqlite")], stdin=f, check=True)
os.symlink(os.path.abspath(extension), os.path.join(scratch, "build", "nsystrace.so"))
os.symlink(os.path.join(src, "sql"), os.path.join(scratch, "sql"))

# What an interpreter says when the binding itself is not installed: a skip, with the package to install.
MISSING_BINDING = {
    "python": ("No module named '_sqlite3'", "python3"),
    "r": ("there is no package called", "r-cran-rsqlite"),
    "ruby": ("cannot load such file -- sqlite3", "ruby-sqlite3"),
    "perl": ("Can't locate DBD/SQLite", "libdbd-sqlite3-perl"),
    "tcl": ("can't find package sqlite3", "libsqlite3-tcl"),
}
command, env = LANGUAGES[lang]()
r = subprocess.run(command, cwd=scratch, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True)
if r.returncode != 0:
    if lang in MISSING_BINDING and MISSING_BINDING[lang][0] in r.stderr:
        skip(f"its SQLite binding is not installed ({r.stderr.strip().splitlines()[0]}); "
             + install_hint.format(MISSING_BINDING[lang][1]))
    fail(f"the {lang} example {exit_status(r.returncode)}:\n{r.stdout[-2000:]}{r.stderr[-4000:]}")
printed = r.stdout


def sections(text):
    """{'# heading': [row, ...]} of the program's output."""
    out, current = {}, None
    for line in text.rstrip("\n").split("\n"):
        if line.startswith("# "):
            current = line
            out[current] = []
        elif current is None:
            fail(f"output before the first '# ' heading: {line!r}\n{text}")
        else:
            out[current].append(line)
    return out


def shell(*args):
    return run([sqlite3_shell, "build/example.sqlite", ".load build/nsystrace", *args], scratch,
               what=f"sqlite3 {' '.join(args)}").rstrip("\n").split("\n")


def same_value(a, b):
    if a == b:
        return True
    try:
        return float(f"{float(a):.15g}") == float(f"{float(b):.15g}")
    except ValueError:
        return False


def same_rows(got, expected):
    return len(got) == len(expected) and all(
        len(g.split("|")) == len(e.split("|")) and all(map(same_value, g.split("|"), e.split("|")))
        for g, e in zip(got, expected))


trace = f"build/gpu0_kernels_{lang}.pftrace"
shell_trace = "build/gpu0_kernels_shell.pftrace"
expected = {
    "# kinds": shell(KINDS),
    "# top_kernels": shell(".read sql/top_kernels.sql"),
    f"# trace {trace}": shell(".parameter set ?1 '" + shell_trace + "'", TRACE),
    "# nvtx forward": shell(".parameter set ?1 'forward'", NVTX),
}
got = sections(printed)
version = got.get("# sqlite_version", ["(not printed)"])
shell_version = shell("select sqlite_version()")[0]
print(f"languages.{lang}: the host's sqlite_version() is {version[0]} (the shell's: {shell_version})")
failures = 0
if len(version) != 1:
    print(f"FAILED: '# sqlite_version' is one line: {version}")
    failures += 1
if sorted(got) != sorted(["# sqlite_version", *expected]):
    print(f"FAILED: the sections printed are {sorted(got)}, not {sorted(['# sqlite_version', *expected])}")
    failures += 1
for heading, rows in expected.items():
    if heading not in got:
        continue
    if heading.startswith("# trace"):
        path = os.path.join(scratch, trace)
        size = os.path.getsize(path) if os.path.exists(path) else None
        ok = (got[heading] == rows and size is not None and str(size) == rows[0]
              and filecmp.cmp(path, os.path.join(scratch, shell_trace), shallow=False))
        print(f"{'ok' if ok else 'FAILED'}: {trace}: {got[heading]} bytes printed, {size} on disk; the shell's "
              f"trace of the same rows: {rows} bytes, {'byte-identical' if ok else 'not the same bytes'}")
    else:
        ok = same_rows(got[heading], rows)
        print(f"{'ok' if ok else 'FAILED'}: {heading[2:]}: {len(got[heading])} rows, the shell's {len(rows)}")
        if not ok:
            print("  printed:\n    " + "\n    ".join(got[heading]) + "\n  the shell:\n    " + "\n    ".join(rows))
    failures += not ok
sys.exit(1 if failures else 0)
