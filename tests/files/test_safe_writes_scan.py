"""No module of dlio_mpi/ or analysis/ but dlio_mpi/files/safe_files.py creates a file for writing
itself: a new way of writing a file that could follow a link planted at its name fails here
(read from the source, not run)."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("dlio_mpi", "analysis")
SAFE = os.path.join("dlio_mpi", "files", "safe_files.py")

# methods that write to their first argument when it is a path (a file object is fine)
WRITE_TO_FIRST = {"savez", "savez_compressed", "savetxt", "savefig", "tofile", "to_csv",
                  "to_json", "to_parquet", "to_pickle", "to_hdf", "to_excel", "dump"}
# methods that write to the object they are called on (pathlib)
WRITE_SELF = {"write_text", "write_bytes", "touch"}
# calls that create or overwrite a file named by an argument
COPIES = {"copy", "copy2", "copyfile", "copytree", "move", "symlink", "link"}
# the engines' constructors (dlio_mpi.engines) and the modes that create without O_EXCL
ENGINES = {"PosixFile", "StdioFile", "MPIFile", "UringFile"}
ENGINE_WRITES_IN_PLACE = {
    # the run's write phase (io.write_first) writes the dataset files in place through the
    # application's interface, as a write-then-read benchmark does: "c" (create, keep), which
    # the POSIX and STDIO engines open without following a link at the name
    os.path.join("dlio_mpi", "data", "write_phase.py"),
    # the backend's open for it (Backend.open_write), which only the write phase calls
    os.path.join("dlio_mpi", "backends", "__init__.py"),
}
# HDF5 files the run's write phase creates in place (io.write_first), as above
H5_CREATE_IN_PLACE = {os.path.join("dlio_mpi", "data", "write_hdf5.py")}
LINKS_ALLOWED = {os.path.join("dlio_mpi", "run", "status.py")}   # the failure note, linked to its name


def _sources():
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    rel = os.path.relpath(path, ROOT)
                    if rel != SAFE:
                        yield rel, path


def _name(func):
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _arg(call, pos, key):
    if len(call.args) > pos:
        return call.args[pos]
    for kw in call.keywords:
        if kw.arg == key:
            return kw.value
    return None


def _kw(call, key):
    return next((kw.value for kw in call.keywords if kw.arg == key), None)


def _const(node):
    return node.value if isinstance(node, ast.Constant) else None


def _choices(node):
    """The constant values node can take (either branch of a conditional), or None."""
    if isinstance(node, ast.IfExp):
        a, b = _choices(node.body), _choices(node.orelse)
        return None if a is None or b is None else a | b
    return {node.value} if isinstance(node, ast.Constant) else None


def _file_objects(tree):
    """Names bound to file objects or in-memory buffers: `with ... as name`, or assigned from
    a call whose name says it is a buffer or a sink."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if isinstance(item.optional_vars, ast.Name):
                    names.add(item.optional_vars.id)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            callee = _name(node.value.func) or ""
            if callee in ("BytesIO", "StringIO", "fdopen") or callee.endswith("Sink"):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _flags(node):
    return {n.attr if isinstance(n, ast.Attribute) else n.id
            for n in ast.walk(node) if isinstance(n, (ast.Attribute, ast.Name))}


def unsafe_writes(rel, source):
    """(line, what) of every place in source that writes a file other than through
    dlio_mpi.files.safe_files."""
    tree = ast.parse(source, rel)
    files = _file_objects(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name, dotted = _name(node.func), _dotted(node.func)
        if name == "open" and dotted in ("open", "io.open", "codecs.open", "builtins.open"):
            mode = _arg(node, 1, "mode")
            text = "r" if mode is None else _const(mode)
            if not isinstance(text, str) or set(text) & set("wax+"):
                found.append((node.lineno, f"open(..., {ast.unparse(mode)})"))
        elif dotted == "os.open":
            flags = _flags(_arg(node, 1, "flags") or ast.Constant(0))
            if "O_CREAT" in flags and "O_EXCL" not in flags:
                found.append((node.lineno, "os.open with O_CREAT and without O_EXCL"))
        elif (name in WRITE_TO_FIRST or dotted in ("np.save", "numpy.save")) and node.args:
            first = node.args[0]
            if not (isinstance(first, ast.Name) and first.id in files):
                # json.dump/pickle.dump write to their second argument
                if name == "dump":
                    target = _arg(node, 1, "fp")
                    if target is not None and not (isinstance(target, ast.Name)
                                                   and target.id in files):
                        found.append((node.lineno, f"{dotted}(..., {ast.unparse(target)})"))
                    continue
                found.append((node.lineno, f"{dotted}({ast.unparse(first)}, ...)"))
        elif name in WRITE_SELF and isinstance(node.func, ast.Attribute):
            found.append((node.lineno, f"{dotted}()"))
        elif name in COPIES and dotted.split(".")[0] in ("shutil", "os"):
            if not (name == "link" and rel in LINKS_ALLOWED):
                found.append((node.lineno, f"{dotted}()"))
        elif name == "File" and "h5py" in dotted:
            mode = _arg(node, 1, "mode")
            if _const(mode) != "r":
                found.append((node.lineno, f"h5py.File(..., {ast.unparse(mode) if mode else ''})"))
        elif name == "ZipFile":
            mode = _arg(node, 1, "mode")
            if mode is not None and _const(mode) != "r":
                found.append((node.lineno, f"ZipFile(..., {ast.unparse(mode)})"))
        elif name in ENGINES:
            pos = 2 if name == "MPIFile" else 1
            mode = _arg(node, pos, "mode")
            modes = {"r"} if mode is None else _choices(mode)
            allowed = {"r", "r+", "x"} | ({"c"} if rel in ENGINE_WRITES_IN_PLACE else set())
            if modes is None or not modes <= allowed:
                found.append((node.lineno, f"{name}(..., {ast.unparse(mode)})"))
        elif name == "H5Dataset":
            create, excl = _kw(node, "create"), _kw(node, "exclusive")
            if create is not None and _const(excl) is not True and rel not in H5_CREATE_IN_PLACE:
                found.append((node.lineno, "H5Dataset(create=...) without exclusive=True"))
    return found


def test_no_write_outside_safe_files():
    bad = []
    for rel, path in _sources():
        with open(path) as f:
            source = f.read()
        bad += [f"{rel}:{line}: {what}" for line, what in unsafe_writes(rel, source)]
    assert not bad, ("files written other than through dlio_mpi.files.safe_files (create, replaced, "
                     "write_whole, create_hdf5):\n" + "\n".join(bad))


@pytest.mark.parametrize("source", [
    'open(p, "w")', 'open(p, mode="ab")', 'open(p, m)', 'os.open(p, os.O_WRONLY | os.O_CREAT)',
    'np.save(os.path.join(d, "x.npy"), a)', 'np.savez(path, a=a)', 'fig.savefig("out.png")',
    'frame.to_csv(path)', 'json.dump(obj, open_thing)', 'pathlib.Path(p).write_text("x")',
    'h5py.File(p, "w")', 'engines.PosixFile(p, "w")', 'engines.MPIFile(comm, p, "c")',
    'engines.H5Dataset(p, "d", create=(4,))', 'shutil.copy(a, b)',
])
def test_the_scan_finds_each_way_of_writing(source):
    assert unsafe_writes("dlio_mpi/example.py", source)


@pytest.mark.parametrize("source", [
    'open(p)', 'open(p, "rb")', 'os.open(p, os.O_RDONLY)',
    'os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL)',
    'with safe_files.create(p) as f:\n    np.save(f, a)',
    'buf = io.BytesIO()\nfig.savefig(buf, format="png")',
    'with safe_files.replaced(p) as f:\n    json.dump(obj, f)',
    'h5py.File(p, "r")', 'engines.PosixFile(p, "x")', 'engines.PosixFile(p)',
    'engines.H5Dataset(p, "d", create=(4,), exclusive=True)',
])
def test_the_scan_lets_safe_writes_pass(source):
    assert not unsafe_writes("dlio_mpi/example.py", source)
