"""The package-structure checker behind tests/test_layering.py.

Reads the source with :mod:`ast` only (nothing is imported), so it also runs on planted
modules under a tmp directory. Module names are dotted (``lancenb.file.reader``); the
``kernels/`` directory installs as ``lancenb.kernels``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

# layer order, lowest first: a module may import its own layer and lower ones only
# (kernels, numpy and numba only, sit below io: io's local reads call a pread kernel)
LAYERS = ["errors", "kernels", "io", "encodings", "file", "table", "expr", "index", "dataset",
          "top"]
# first component under lancenb/ -> layer (anything not named is "top": spark, inspect,
# tools, fragment and the package root)
LAYER_OF = {"errors": "errors", "_version": "errors", "io": "io", "_proto": "io",
            "kernels": "kernels", "encodings": "encodings", "file": "file",
            "table": "table", "expr": "expr", "index": "index", "dataset": "dataset"}
# private modules of the package root that every layer may import
SHARED_PRIVATE = ("lancenb._version", "lancenb._proto")


@dataclass
class Import:
    target: str  # dotted module the statement loads (a module of the package when known)
    names: tuple[str, ...]  # names taken from it (``from x import a, b``); () for ``import x``
    line: int
    deferred: bool  # inside a function body (runs at call time, not import time)


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    lines: int
    imports: list[Import] = field(default_factory=list)
    attrs: list[tuple[str, str, int]] = field(default_factory=list)  # (alias target, attr, line)
    names: dict[str, tuple[str, str]] = field(default_factory=dict)  # local -> (module, name)


def module_name(path: Path, root: Path) -> str:
    """Dotted name of a source file under ``root`` (the repository)."""
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "kernels":
        parts = ["lancenb", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(name: str) -> str | None:
    """Layer of a dotted module name of the package, None outside it."""
    parts = name.split(".")
    if parts[0] != "lancenb":
        return None
    if len(parts) == 1:
        return "top"  # the package root
    return LAYER_OF.get(parts[1], "top")


def _resolve(node: ast.ImportFrom, mod: Module) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.name.split(".")
    if not mod.is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _collect(mod: Module, known: set[str]) -> None:
    aliases: dict[str, str] = {}  # local name -> module it is bound to

    def visit(node, deferred):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                continue  # typing-only imports never run
            d = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                               ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    mod.imports.append(Import(a.name, (), child.lineno, d))
                    if a.asname:
                        aliases[a.asname] = a.name
            elif isinstance(child, ast.ImportFrom):
                src = _resolve(child, mod)
                plain = []
                for a in child.names:
                    sub = f"{src}.{a.name}"
                    if sub in known:
                        mod.imports.append(Import(sub, (), child.lineno, d))
                        aliases[a.asname or a.name] = sub
                    else:
                        plain.append(a.name)
                        if not d:
                            mod.names[a.asname or a.name] = (src, a.name)
                if plain or not child.names:
                    mod.imports.append(Import(src, tuple(plain), child.lineno, d))
            elif isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
                mod.attrs.append((child.value.id, child.attr, child.lineno))
            visit(child, d)

    visit(mod.tree, False)
    # ``import a.b as x`` / ``from a import b`` bind a module: record x.attr uses
    mod.attrs = [(aliases[n], a, ln) for n, a, ln in mod.attrs if n in aliases]


def load(root: Path, dirs=("lancenb", "kernels")) -> dict[str, Module]:
    """Every module under ``root/<dirs>``, parsed, with its imports."""
    mods = {}
    for d in dirs:
        for p in sorted((root / d).rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            text = p.read_text()
            name = module_name(p, root)
            mods[name] = Module(name, p, p.name == "__init__.py", ast.parse(text, str(p)),
                                text.count("\n") + (not text.endswith("\n") and bool(text)))
    known = set(mods)
    for m in mods.values():
        _collect(m, known)
    return mods


def _target(imp: Import, mods: dict[str, Module]) -> str | None:
    """The package module an import loads (the longest known prefix), or None."""
    parts = imp.target.split(".")
    while parts:
        name = ".".join(parts)
        if name in mods:
            return name
        parts.pop()
    return None


def cycles(mods: dict[str, Module], *, deferred: bool = False) -> list[list[str]]:
    """Import cycles (strongly connected components of more than one module, or a module
    importing itself), each sorted; module-level imports only unless ``deferred``."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m in mods.values():
        for imp in m.imports:
            if imp.deferred and not deferred:
                continue
            t = _target(imp, mods)
            if t is not None and not (m.name.startswith(t + ".") and t != m.name):
                # ``from package import submodule`` inside the package itself is the
                # submodule edge already recorded; the parent package is not re-run
                graph[m.name].add(t)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):  # Tarjan, iterative enough for a package of a few hundred modules
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out)


def upward_imports(mods: dict[str, Module]) -> list[str]:
    """``"importer -> imported (line n)"`` for every import of a higher layer, or of the
    package root, from inside the package (deferred imports included)."""
    out = []
    for m in mods.values():
        own = layer(m.name)
        for imp in m.imports:
            t = imp.target
            if t.split(".")[0] != "lancenb":
                continue
            if t == "lancenb" and m.name != "lancenb":
                out.append(f"{m.name} -> lancenb (line {imp.line})")
                continue
            other = layer(t)
            if other is None or own is None:
                continue
            if own == "top" or other == own:
                continue
            if LAYERS.index(other) > LAYERS.index(own):
                out.append(f"{m.name} -> {t} (line {imp.line})")
    return sorted(set(out))


def long_modules(mods: dict[str, Module], limit: int = 800) -> dict[str, int]:
    return {m.name: m.lines for m in mods.values() if m.lines > limit}


def private_access(mods: dict[str, Module]) -> list[str]:
    """``"importer -> module._name"`` for each private name of another layer's module used
    through ``from x import _name`` or ``x._name`` (dunders excepted)."""
    out = set()

    def private(n):
        return n.startswith("_") and not (n.startswith("__") and n.endswith("__"))

    for m in mods.values():
        own = layer(m.name)
        if own is None:
            continue
        for imp in m.imports:
            t = _target(imp, mods)
            if t is None:
                continue
            tail = imp.target.split(".")[len(t.split(".")):]
            names = list(imp.names) + tail[:1]
            for n in names:
                if private(n) and layer(t) != own:
                    out.add(f"{m.name} -> {t}.{n}")
            # a private module of another layer (``lancenb.file._x``)
            if layer(t) != own and any(private(p) for p in t.split(".")[1:]) and \
                    not t.startswith(SHARED_PRIVATE):
                out.add(f"{m.name} -> {t}")
        for target, attr, _line in m.attrs:
            t = target if target in mods else None
            if t is not None and private(attr) and layer(t) != own:
                out.add(f"{m.name} -> {t}.{attr}")
    return sorted(out)


def _class_in(mods: dict[str, Module], module: str | None, name: str, depth=0):
    m = mods.get(module)
    if m is None or depth > 5:
        return None, None
    for n in m.tree.body:
        if isinstance(n, ast.ClassDef) and n.name == name:
            return m, n
    if name in m.names:  # re-exported
        return _class_in(mods, *m.names[name], depth + 1)
    return None, None


def _module_aliases(mod: Module):
    """``(local name, module)`` for names bound to package modules by imports."""
    for imp in mod.imports:
        if not imp.names and not imp.deferred:
            yield imp.target.rsplit(".", 1)[-1], imp.target


def _public_defs(mod: Module, mods: dict[str, Module]):
    """``(qualified name, has docstring)`` for public functions, classes and methods; a
    method without its own docstring inherits one from a base class of the package that
    documents it (as :func:`inspect.getdoc` does)."""

    def base_of(owner: Module, b):
        if isinstance(b, ast.Name):
            if b.id in owner.names:
                return _class_in(mods, *owner.names[b.id])
            return _class_in(mods, owner.name, b.id)
        if isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name):
            target = next((t for n, t in _module_aliases(owner) if n == b.value.id), None)
            return _class_in(mods, target, b.attr)
        return None, None

    def inherited(owner: Module, cls: ast.ClassDef, name: str, depth=0) -> bool:
        if depth > 10:
            return False
        for b in cls.bases:
            bmod, base = base_of(owner, b)
            if base is None:
                continue
            for node in base.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        node.name == name and ast.get_docstring(node) is not None:
                    return True
            if inherited(bmod, base, name, depth + 1):
                return True
        return False

    def walk(body, prefix, cls):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name.startswith("_"):
                    continue
                if cls is not None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        and any(_decorator_name(d) in ("setter", "deleter", "overload")
                                for d in node.decorator_list):
                    continue  # documented on the getter / the implementation
                has = ast.get_docstring(node) is not None or (
                    cls is not None and inherited(mod, cls, node.name))
                yield f"{prefix}{node.name}", has
                if isinstance(node, ast.ClassDef):
                    yield from walk(node.body, f"{prefix}{node.name}.", node)

    if mod.name.split(".")[-1].startswith("_") and not mod.is_package:
        return  # a private module: its names are not public API
    if any(p.startswith("_") for p in mod.name.split(".")[1:-1]):
        return
    yield from walk(mod.tree.body, f"{mod.name}.", None)


def _decorator_name(d) -> str:
    if isinstance(d, ast.Attribute):
        return d.attr
    if isinstance(d, ast.Name):
        return d.id
    if isinstance(d, ast.Call):
        return _decorator_name(d.func)
    return ""


def docstring_coverage(mods: dict[str, Module], prefix: str = "lancenb.",
                       exclude: tuple[str, ...] = ("lancenb.kernels",)):
    """``(documented, total, missing names)`` over public functions, classes and methods
    of modules under ``prefix``."""
    done, missing = 0, []
    for m in sorted(mods.values(), key=lambda m: m.name):
        if not (m.name + ".").startswith(prefix) or m.name.startswith(exclude):
            continue
        for qual, has in _public_defs(m, mods):
            if has:
                done += 1
            else:
                missing.append(qual)
    return done, done + len(missing), missing


def private_attributes(mods: dict[str, Module]) -> list[str]:
    """``"module -> ._name (layer)"`` for each ``obj._name`` (obj not ``self``/``cls``)
    whose private name is defined (a ``def``/``class`` or an attribute assignment) only in
    other layers than the module's: reaching into another layer's objects. A heuristic by
    name; a private name of a third-party object can match by chance."""
    defined: dict[str, set[str]] = {}
    for m in mods.values():
        own = layer(m.name)
        for n in ast.walk(m.tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = n.name
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                name = n.attr
            else:
                continue
            if name.startswith("_") and not name.startswith("__"):
                defined.setdefault(name, set()).add(own)
    out = set()
    for m in mods.values():
        own = layer(m.name)
        for n in ast.walk(m.tree):
            if not (isinstance(n, ast.Attribute) and n.attr.startswith("_")
                    and not n.attr.startswith("__")):
                continue
            if isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                continue
            where = defined.get(n.attr, set())
            if where and own not in where:
                out.add(f"{m.name} -> .{n.attr} ({', '.join(sorted(where))})")
    return sorted(out)
