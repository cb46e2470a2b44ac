"""The single jit policy for every kernel.

``cache=True`` so users pay compilation once per machine; ``nogil=True`` so readers
can decode columns on several threads. No fastmath: float bits must round-trip.
Under ``NUMBA_DISABLE_JIT=1`` numba returns the plain Python function, which is how
the kernel tests also run as ordinary Python (for coverage and as a second oracle).

Where the cache lives is numba's choice, in this order: ``NUMBA_CACHE_DIR`` when set;
``__pycache__`` next to the kernel sources when that is writable; otherwise the user's
cache directory (``~/.cache/numba`` on Linux), so a read-only site-packages still
caches. ``lancenb warmup`` fills it ahead of time.

Several processes may compile the same kernel at once (Spark's Python workers, the
parallel ``lancenb warmup``). numba's own cache is not safe then: each kernel has one
index file mapping signatures to numbered data files, and two writers that read the
index at the same time can both give their signature the same number, leaving an index
entry that points at the other signature's machine code. :class:`_LockedCache` holds an
exclusive file lock (one per kernel, next to its index) while a process updates that
kernel's index and data, so writers take turns; a reader that looks while a writer is
between the two files finds no data file and compiles instead (numba treats a missing
data file as a miss).

A wheel can also carry compiled kernels, so that first use compiles nothing (issue 18):
``lancenb/kernels/_jitcache/`` holds numba cache files built when the wheel was built,
for a portable CPU target (``NUMBA_CPU_NAME``, e.g. ``x86-64-v3``) instead of the build
machine's, plus ``manifest.json`` naming that target, its CPU features and the numba,
Python and numpy versions. When numba's own cache (above) has no entry for a
specialisation, :class:`_LockedCache` looks there for the entry compiled for the
portable target, but only if this machine's CPU has every feature the target needs and
the versions match (:func:`_shipped_target`); anything else compiles as before. That
directory is only ever read at run time; what compiles here is saved in numba's cache,
which is consulted first, so ``lancenb warmup`` still gives code tuned to the host CPU.
Both caches stamp a kernel module by a hash of its content, not its modification time
(installing a wheel gives files new times), so an edited kernel file never loads stale
machine code.

Loading is what a warm start spends its kernel time on (47 specialisations in the
start-up benchmark), so it skips what numba does that only a compilation needs: the
target-context refresh (:meth:`_LockedCache.load_overload`), parsing each entry's
LLVM bitcode (:class:`_LazyLibrary`) and importing the numba modules whose helpers a
kernel calls only to name their environments (:class:`_EntryFile`); and the source
reading behind the read-only normalisation is stored per kernel module
(:func:`_written_stored`).
"""

import ast
import functools
import hashlib
import io
import json
import os
import pickle
import sys

import llvmlite.binding as ll
import numba
from numba.core import errors, types, typing
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import CompileResult
from numba.core.compiler_lock import global_compiler_lock
from numba.core.environment import Environment, lookup_environment
from numba.core.registry import CPUDispatcher
from numba.core.runtime import rtsys

from . import WRITTEN_SUFFIX

try:
    import fcntl
except ImportError:  # Windows: numba's own behaviour, unlocked
    fcntl = None

__all__ = ["kernel"]


# the compiled kernels a wheel ships (see the module docstring); never written at run time
SHIPPED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_jitcache")
MANIFEST = "manifest.json"


@functools.lru_cache(maxsize=None)
def _content_stamp(path: str):
    """A kernel module's cache stamp: the SHA-256 of its bytes (None if unreadable)."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).digest()
    except OSError:
        return None


def host_cpu_features() -> frozenset:
    """The CPU features (LLVM's names) of this machine."""
    return frozenset(k for k, v in ll.get_host_cpu_features().items() if v)


def _numpy_major() -> str:
    import numpy as np

    return np.__version__.split(".")[0]


@functools.lru_cache(maxsize=None)
def _shipped_target(directory: str = SHIPPED_DIR):
    """The numba ``magic_tuple`` (LLVM triple, CPU name, CPU features) the shipped cache
    in ``directory`` was compiled for, or None when it cannot be used here: no cache,
    another numba, Python or numpy major version, another triple, or a CPU lacking a
    feature the target needs."""
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
        if manifest["numba"] != numba.__version__ or \
                manifest["python"] != "%d.%d" % sys.version_info[:2] or \
                manifest["numpy_major"] != _numpy_major():
            return None
        from numba.core.registry import cpu_target

        host_triple = cpu_target.target_context.codegen().magic_tuple()[0]
        have = host_cpu_features()
        for target in manifest["targets"]:  # best first
            triple, cpu, features = target["magic"]
            if triple == host_triple and have.issuperset(target["requires"]):
                return (triple, cpu, features)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no shipped cache, or a damaged manifest: compile as numba would
    return None


class _LazyLibrary(JITCodeLibrary):
    """A code library loaded from a cache file whose LLVM IR is parsed only when needed.

    A cache entry holds the kernel's object code and, for linking it into kernels
    compiled later, its LLVM bitcode. numba parses that bitcode on every load, and then
    walks all its functions to record their names in the JIT engine: most of the time
    loading a cached specialisation takes (about two thirds; more for big kernels). Here
    the object code is loaded at once and the bitcode kept as bytes; a function's
    address is asked of the JIT engine directly (it knows every symbol of the loaded
    object). The bitcode is parsed, and its names recorded, the first time a compilation
    links this library into another one.
    """

    _bitcode = None

    @classmethod
    def load(cls, codegen, state):
        name, kind, (object_code, bitcode) = state
        assert kind == "object"
        self = cls(codegen, name)
        self.enable_object_caching()
        self._set_compiled_object(object_code)
        self._bitcode = bitcode
        self._finalize_final_module()
        return self

    def _get_module_for_linking(self):
        if self._bitcode is not None:
            self._shared_module = ll.parse_bitcode(self._bitcode)
            self._bitcode = None
            self._codegen._engine._load_defined_symbols(self._shared_module)
        return super()._get_module_for_linking()

    def get_pointer_to_function(self, name):
        self._ensure_finalized()
        address = self._codegen._engine.get_function_address(name)
        return address or super().get_pointer_to_function(name)


def _rebuild_env(modname, consts, env_name):
    """numba's ``environment._rebuild_env`` (what a pickled ``Environment`` calls), except
    that the module it names is not imported when it is not already.

    Every function compiled into a kernel's code has an environment: its module's
    globals and the Python constants the code boxes. A kernel's cache entry holds the
    environments of numba's own helpers it calls (``np.empty``, sorting, ...), so numba
    imports ``numba.np.arrayobj``, ``numba.np.arraymath``, ``numba.np.npyimpl`` and what
    they import while loading the first entries (about 0.1 s of a warm start) just to
    hand their globals to code that never reads them: only object-mode code looks
    globals up at run time, and kernels and numba's helpers are nopython code. The
    constants, which nopython code does read, are restored as numba restores them. A
    module already imported gives its real globals, as in numba.
    """
    env = lookup_environment(env_name)
    if env is not None:
        return env
    module = sys.modules.get(modname)
    env = Environment(module.__dict__ if module is not None else {"__name__": modname})
    env.consts[:] = consts
    env.env_name = env_name
    Environment._memo[env_name] = env
    return env


class _EntryUnpickler(pickle.Unpickler):
    """Unpickles a cache entry with :func:`_rebuild_env` for numba's."""

    def find_class(self, module, name):
        if name == "_rebuild_env" and module == "numba.core.environment":
            return _rebuild_env
        return super().find_class(module, name)


class _EntryFile(IndexDataCacheFile):
    """numba's index and data files of one kernel, entries read by :class:`_EntryUnpickler`."""

    def _load_data(self, name):
        with open(self._data_path(name), "rb") as f:
            return _EntryUnpickler(io.BytesIO(f.read())).load()


def _rebuild(target_context, payload):
    """A cached compile result (the tuple numba's ``CompileResult._reduce`` makes) made
    live again, as ``CompileResult._rebuild`` does, but with a :class:`_LazyLibrary`."""
    (libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init,
     referenced_envs) = payload
    codegen = target_context.codegen()
    if objectmode or lifted or libdata[1] != "object" or \
            codegen._library_class is not JITCodeLibrary:
        return CompileResult._rebuild(target_context, *payload)
    for init in reload_init or ():
        init()
    library = _LazyLibrary.load(codegen, libdata)
    entry = target_context.get_executable(library, fndesc, env)
    result = CompileResult(
        target_context=target_context, typing_context=target_context.typing_context,
        library=library, environment=env, entry_point=entry, fndesc=fndesc,
        type_annotation=typeann, signature=signature, objectmode=objectmode,
        lifted=lifted, typing_error=None, call_helper=None, metadata=None,
        reload_init=reload_init, referenced_envs=referenced_envs)
    for referenced in referenced_envs:
        library.codegen.set_env(referenced.env_name, referenced)
    return result


class _Codegen:
    """Stands in for a codegen in numba's cache key: only its ``magic_tuple`` is read."""

    def __init__(self, magic):
        self._magic = magic

    def magic_tuple(self):
        return self._magic


@functools.lru_cache(maxsize=None)
def _host_magic(codegen) -> _Codegen:
    """``codegen``'s cache-key part, asked once: numba asks LLVM for the triple and the
    host CPU's name again for every entry it loads."""
    return _Codegen(codegen.magic_tuple())


class _LockedCache(FunctionCache):
    """numba's function cache with saves serialised across processes by a file lock,
    content-hash source stamps, and the shipped cache as a read-only second place to
    look (see the module docstring)."""

    def __init__(self, py_func):
        super().__init__(py_func)
        stamp = _content_stamp(os.path.abspath(py_func.__code__.co_filename))
        self._cache_file = _EntryFile(self._cache_path, self._impl.filename_base,
                                      stamp if stamp is not None
                                      else self._cache_file._source_stamp)

    def load_overload(self, sig, target_context):
        # numba's version first refreshes the target context, which imports and installs
        # every lowering registry numba has (about 0.3 s CPU, once per process): only a
        # compilation needs them (numba's compiler refreshes both contexts itself), while
        # running loaded machine code needs only the runtime (NRT) it calls
        if not self._enabled:
            return None
        rtsys.initialize(target_context)
        try:
            with self._guard_against_spurious_io_errors():
                data = self._load_overload(sig, target_context)
        except Exception:  # noqa: BLE001
            # a damaged entry, or a numba whose internals this loader does not know
            # (it rebuilds entries with numba's private pieces): compile, as on a miss
            data = None
        if data is None:
            data = self._load_shipped(sig, target_context)
        return data

    def _load_overload(self, sig, target_context):
        key = self._index_key(sig, _host_magic(target_context.codegen()))
        data = self._cache_file.load(key)
        return None if data is None else _rebuild(target_context, data)

    def _load_shipped(self, sig, target_context):
        # LANCENB_SHIPPED_KERNELS: another directory to use instead, or empty for none
        # (``lancenb warmup`` compiles for this CPU, so its workers use none)
        directory = os.environ.get("LANCENB_SHIPPED_KERNELS", SHIPPED_DIR)
        magic = _shipped_target(directory) if directory else None
        if magic is None:
            return None
        shipped = _EntryFile(directory, self._impl.filename_base,
                             self._cache_file._source_stamp)
        try:
            data = shipped.load(self._index_key(sig, _Codegen(magic)))
            return None if data is None else _rebuild(target_context, data)
        except Exception:  # noqa: BLE001  a damaged shipped file only costs a compile
            return None

    def _lock(self):
        """An open descriptor holding this kernel's exclusive lock, or None."""
        if fcntl is None:
            return None
        try:
            self._impl.locator.ensure_cache_path()
            fd = os.open(self._cache_file._index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:  # no writable cache directory: numba's own (unlocked) save
            return None
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def save_overload(self, sig, data):
        fd = self._lock()
        try:
            super().save_overload(sig, data)
        finally:
            if fd is not None:
                os.close(fd)  # closing the descriptor releases the lock


class _KernelDispatcher(CPUDispatcher):
    """numba's dispatcher, compiling one specialisation where numba would compile two.

    numba types a read-only array (``np.frombuffer`` over file bytes, Arrow buffers)
    and a writable one differently and compiles a kernel once for each; and a literal
    integer passed from one kernel to another (``f(x, 0)``) gets a specialisation of its
    own. Here every array argument the kernel never writes is typed read-only and
    literals as their plain type, so all of those calls share one compilation (a
    writable array converts to a read-only parameter for free; nothing is copied).
    Which parameters a kernel writes is read from its source (:func:`_written`); if
    that guess is wrong the read-only compilation fails to type and the kernel is
    compiled for the arguments as given, as numba would have.
    """

    def _normalised(self, argtypes):
        written = _written_stored(self)
        return tuple(
            t.copy(readonly=True) if isinstance(t, types.Array) and t.mutable
            and i not in written else types.unliteral(t)
            for i, t in enumerate(argtypes))

    def _compile_normalised(self, argtypes):
        with global_compiler_lock:  # ast.parse is not thread-safe in CPython 3.11
            norm = self._normalised(argtypes)
        if norm != argtypes and self._plain is not True:
            try:
                return self.compile(norm), norm
            except errors.TypingError:
                self._plain = True  # the source reading was wrong: compile as given
                with global_compiler_lock:
                    _store_plain(self)
        return self.compile(argtypes), argtypes

    def _compile_for_args(self, *args, **kws):
        if kws or not self._can_compile:
            return super()._compile_for_args(*args, **kws)
        argtypes = tuple(self.typeof_pyval(a) for a in args)
        entry, compiled = self._compile_normalised(argtypes)
        if compiled != argtypes:
            # let numba's C dispatch send calls with these argument types straight to
            # that machine code from now on (a read-only and a writable array have the
            # same native layout; read-only is a typing mark only). Once per argument
            # types: threads that miss at the same time all land here, and a second
            # entry for the same types makes every later call with them ambiguous to
            # the C dispatch, which then sends each one here (~20 us of Python typing
            # per call, for good)
            with global_compiler_lock:
                if argtypes not in self._inserted:
                    self._insert([t._code for t in argtypes], entry, False)
                    self._inserted.add(argtypes)
        return entry

    def get_call_template(self, args, kws):
        # a call from another kernel being typed: compile the normalised signature only
        # (numba's version compiles the argument types as given); the caller's typing
        # then converts its arguments to it
        pysig, folded = self._compiler.fold_argument_types(args, kws)
        folded = tuple(folded)
        if self._can_compile:
            self._compile_normalised(folded)
        name = self.py_func.__name__
        template = typing.make_concrete_template(f"CallTemplate({name})", key=name,
                                                 signatures=self.nopython_signatures)
        return template, pysig, folded, {}


def kernel(fn=None, *, inline=False):
    """Compile ``fn`` with the project's jit policy.

    ``@kernel(inline=True)`` is for small helpers other kernels call once per value
    (a byte out, a big-endian word in, a number's digits): numba then inlines their
    code into each caller (``inline='always'``) instead of calling them, a call that
    costs more than such a helper's work (an array's reference count taken and given
    back at each call: ~2-4 ns, against ~2 ns for two digits written inline). Called
    from Python they compile as any kernel."""
    if fn is None:
        return functools.partial(kernel, inline=inline)
    if numba.config.DISABLE_JIT:
        return numba.njit(fn)
    opts = {"nopython": True, "nogil": True}
    if inline:
        opts["inline"] = "always"
    d = _KernelDispatcher(py_func=fn, locals={}, targetoptions=opts)
    d._cache = _LockedCache(fn)
    d._plain = None
    d._inserted = set()  # argument types given their own entry by _compile_for_args
    return d


# -- which parameters a kernel writes ------------------------------------------------

# Reading that from the source (parse the module, walk each kernel's tree) costs about
# 3 ms per kernel on first use, which adds up to a good part of a warm start. So each
# kernel module's answers are kept in a small JSON file next to its numba cache files
# (and shipped in the wheel's cache with them), under the module's content hash: a
# changed module is read afresh. What a kernel writes also depends on the kernels it
# calls in other modules; an answer gone stale by an edit there costs what a wrong
# reading always costs (a failed read-only compilation, then one as given), as numba's
# own cache, keyed on the caller's module only, does for the machine code.
_WRITTEN_TABLES: dict = {}  # kernel module path -> {"name:line": frozenset}


def _written_path(directory: str, filename: str) -> str:
    stem = os.path.splitext(os.path.basename(filename))[0]
    return os.path.join(directory, stem + WRITTEN_SUFFIX)


def _load_written(filename: str, stamp: bytes, cache_path: str, *, shipped=True) -> dict:
    table: dict = {}
    shipped = os.environ.get("LANCENB_SHIPPED_KERNELS", SHIPPED_DIR) if shipped else None
    for directory in (shipped, cache_path):  # the local cache last: it wins
        if not directory:
            continue
        try:
            with open(_written_path(directory, filename), encoding="utf-8") as f:
                data = json.load(f)
            if data["stamp"] == stamp.hex():
                table.update({k: frozenset(v) for k, v in data["written"].items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # none, or damaged: read the source
    return table


def _save_written(filename: str, stamp: bytes, cache_path: str, table: dict) -> None:
    path = _written_path(cache_path, filename)
    tmp = f"{path}.{os.getpid()}.tmp"
    # merged with what another process stored meanwhile (warm-up workers share a cache):
    # a union only ever widens an answer, and a wider one is never wrong, only slower
    table.update({k: table.get(k, frozenset()) | v
                  for k, v in _load_written(filename, stamp, cache_path, shipped=False).items()})
    try:
        os.makedirs(cache_path, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"stamp": stamp.hex(),
                       "written": {k: sorted(v) for k, v in sorted(table.items())}}, f)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old or the new file
    except OSError:  # no writable cache directory: read the source next time too
        try:
            os.remove(tmp)
        except OSError:
            pass


def _store_plain(dispatcher) -> None:
    """Record that ``dispatcher``'s read-only compilation failed to type (the source
    reading missed a write): every parameter counts as written from now on, here and in
    later processes (and in a wheel's shipped answers, which the warm-up builds), so none
    of them tries, and compiles half of, the failing signature again."""
    fn = dispatcher.py_func
    filename = os.path.abspath(fn.__code__.co_filename)
    stamp = _content_stamp(filename)
    table = _WRITTEN_TABLES.get(filename)
    if stamp is None or table is None:
        return
    table[f"{fn.__qualname__}:{fn.__code__.co_firstlineno}"] = \
        frozenset(range(fn.__code__.co_argcount))
    _save_written(filename, stamp, dispatcher._cache._cache_path, table)


def _written_stored(dispatcher) -> frozenset:
    """:func:`_written` of a kernel, from the stored answers when its module has not
    changed (called under numba's compiler lock)."""
    fn = dispatcher.py_func
    filename = os.path.abspath(fn.__code__.co_filename)
    stamp = _content_stamp(filename)
    if stamp is None:
        return _written(fn)
    cache_path = dispatcher._cache._cache_path
    table = _WRITTEN_TABLES.get(filename)
    if table is None:
        table = _WRITTEN_TABLES[filename] = _load_written(filename, stamp, cache_path)
    key = f"{fn.__qualname__}:{fn.__code__.co_firstlineno}"
    written = table.get(key)
    if written is None:
        written = table[key] = _written(fn)
        _save_written(filename, stamp, cache_path, table)
    return written

# numpy functions and array methods that write into an argument
_WRITING_METHODS = frozenset({"fill", "sort", "put", "itemset", "resize", "partition"})
# (and bytes_util.copy_bytes, the kernels' memcpy: it writes its first argument)
_WRITING_FUNCS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal",
                            "copy_bytes"})


_VIEW_METHODS = frozenset({"view", "reshape", "ravel", "transpose", "squeeze"})


def _root(node):
    """The name an array expression views: ``a`` for ``a``, ``a[i:j]``, ``a.view(t)``,
    ``a.T``; None for anything else (an element ``a[i]``, a call, an arithmetic result)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            idx = node.slice
            parts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
            if not any(isinstance(p, ast.Slice) for p in parts):
                return None
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr == "T":
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _VIEW_METHODS:
            node = node.func.value
        else:
            return None


@functools.lru_cache(maxsize=None)
def _definitions(filename: str) -> dict:
    """The functions defined at the top of a source file by the line their code starts
    on (the first decorator's): one parse per kernel module, on first use."""
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return {}
    return {min([d.lineno for d in node.decorator_list] + [node.lineno]): node
            for node in tree.body if isinstance(node, ast.FunctionDef)}


@functools.lru_cache(maxsize=None)
def _written(py_func) -> frozenset:
    """Positions of ``py_func``'s parameters it may write to (directly, through a local
    alias or a slice of it, or by passing it to a kernel that writes that argument)."""
    code = py_func.__code__
    fdef = _definitions(code.co_filename).get(code.co_firstlineno)
    if fdef is None:
        return frozenset(range(code.co_argcount))  # source unknown: normalise nothing
    params = [a.arg for a in fdef.args.args]
    alias = {p: p for p in params}  # local name -> the parameter it views
    written: set = set()

    def mark(node):
        r = _root(node)
        if r in alias:
            written.add(alias[r])

    def mark_target(node):  # `x[...] = v`: whatever x views is written, element or slice
        while isinstance(node, ast.Subscript):
            node = node.value
        mark(node)

    # two passes: an alias may be assigned after the loop body that writes it
    for _ in range(2):
        for node in ast.walk(fdef):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(el, ast.Subscript):
                            mark_target(el)
                        elif isinstance(el, ast.Name) and node.value is not None:
                            r = _root(node.value)
                            if r in alias and not isinstance(node.value, ast.Tuple):
                                alias[el.id] = alias[r]
            elif isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr in _WRITING_METHODS:
                    mark_target(f.value)
                name = f.id if isinstance(f, ast.Name) else (
                    f.attr if isinstance(f, ast.Attribute) else None)
                callee = py_func.__globals__.get(name) if isinstance(f, ast.Name) else None
                if isinstance(callee, _KernelDispatcher):
                    cw = _written(callee.py_func)
                    for i, a in enumerate(node.args):
                        if i in cw:
                            mark(a)
                elif name in _WRITING_FUNCS and node.args:
                    mark(node.args[0])
                elif callee is not None and not isinstance(callee, type) and \
                        getattr(callee, "__module__", "") == py_func.__module__:
                    for a in node.args:  # an unknown helper of this module: assume it writes
                        mark(a)
                for k in node.keywords:
                    if k.arg == "out":
                        mark(k.value)
            elif isinstance(node, ast.For):
                # `for x in (a, b)` / zip(...): do not follow; a miss only costs a retry
                pass
    return frozenset(i for i, p in enumerate(params) if p in written)
