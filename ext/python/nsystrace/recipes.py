"""The shipped recipes (the source tree's sql/ and sql/nsys_stats/), found where this package has them: installed
beside it (the build copies them), or in the source tree when it runs from there. The one place the commands
(`nsystrace stats`, `nsystrace diff`) and the page look them up."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TREE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..")
RECIPE_DIRS = [os.path.join(HERE, "sql"), os.path.join(HERE, "sql", "nsys_stats"),
               os.path.join(SOURCE_TREE, "sql"), os.path.join(SOURCE_TREE, "sql", "nsys_stats")]


def names():
    """The shipped recipes' names (file names without .sql), sorted."""
    found = set()
    for d in RECIPE_DIRS:
        if os.path.isdir(d):
            found.update(f[:-4] for f in os.listdir(d) if f.endswith(".sql"))
    return sorted(found)


def text(name):
    """The SQL of the shipped recipe `name` (top_kernels or top_kernels.sql), or None when there is none."""
    name = name[:-4] if name.lower().endswith(".sql") else name
    for d in RECIPE_DIRS:
        path = os.path.join(d, name + ".sql")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    return None
