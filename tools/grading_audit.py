"""What an answer could change in the grading process to pass a check: found, and refused.

Used by tools/grading_child.py, the process that grades one submission (tools/grading.py
starts it; README, "Teaching with it", says why). That process runs the learner's code, so
anything the code can reach by name it can change. Two things here stop that changing a
grade:

* :class:`Baseline` is a picture of the process taken before the first learner cell runs:
  every imported module's names (``sys.modules``, ``builtins`` included), every class's
  and every function's code and defaults, the import hooks, the checker's tables.
  :meth:`Baseline.problems` lists what differs now. The grading process asks it before and
  after every check; a check runs only when nothing that could decide it has changed, and
  passes only when nothing has after it. Checked everywhere: a module name bound to a
  function, class or module, rebound or removed (``dpkit_checks.ex09.check_ring_seconds =
  ...``, ``numpy.testing.assert_allclose = ...``, ``dpkit.checking.agree = ...``); a name
  added to a module that hides a builtin; a module in ``sys.modules`` swapped, or given
  another class; a method of a class rebound, or a special method added
  (``Agreement.__bool__``); a function's code or defaults swapped; ``sys.meta_path`` and
  ``sys.path_hooks``. In the checker itself (``dpkit_checks``), in ``dpkit.checking``,
  its comparison, and in ``builtins``, every name is held, data too (a tolerance, a table
  of cases changed in place). One change is allowed: a lazy module (TensorBoard's
  ``tensorboard.summary``) replaced by the module it loads on first use, which is held
  from then on.

* :func:`install_hook` puts an audit hook (PEP 578) into the process, after the baseline:
  from then on it refuses to open for writing, remove, rename or otherwise change a file
  under a protected folder (the course, the checker, dpkit, Python's own folders: the
  grader's files and what the next submission imports), sqlite on one, starting a program
  other than ``python -m`` of dpkit's and the checker's programs (and a few that only
  read), tracing or profiling (a trace function can jump over a check's ``raise``), the
  garbage collector's object lists, ctypes, and swapping the code of a function the
  learner did not write (the checker's own switching excepted).

Neither is a sandbox: a learner who studies this process can still reach it through
frames or native code. README says what is left, and to grade in a container for that.
"""

from __future__ import annotations

import builtins
import os
import sys
import types

#: Modules held whole (every name, data too): the checker, its comparison, the builtins.
STRICT = ("builtins", "dpkit.checking", "dpkit_checks")
#: Not in the picture: the learner's namespace is the ``__main__`` module.
EXEMPT = ("__main__", "__mp_main__")
#: Programs a check or dpkit may start (``python -m`` these), and ones that only read.
PROGRAMS = ("dpkit.programs", "dpkit_checks.workers")
READERS = ("uname", "nproc", "lscpu", "nvidia-smi", "sysctl")

_MISSING = object()
_MODULE = types.ModuleType
_FUNCTION = types.FunctionType
_SIMPLE = (int, float, complex, str, bytes, bool, type(None))
_DICT_OF = type.__dict__["__dict__"].__get__  # a class's own names, whatever its metaclass says
_BUILTIN_NAMES = frozenset(vars(builtins))
_SPECIAL_KEPT = frozenset({"__abstractmethods__", "__annotations__", "__doc__", "__dict__"})


def _is(value, kinds) -> bool:
    """``isinstance`` by the value's real type: an object's ``__class__`` can say anything
    (absl's flags say they are a module)."""
    return issubclass(type(value), kinds)


def _strict(name: str) -> bool:
    return any(name == s or name.startswith(s + ".") for s in STRICT)


def _guarded(value) -> bool:
    """True for what code calls or looks names up in: functions, classes, modules."""
    return callable(value) or issubclass(type(value), _MODULE)


def _method_like(value) -> bool:
    """A class's entry that behaves: a method, a descriptor, anything callable."""
    return _guarded(value) or _is(value, (staticmethod, classmethod, property))


def _resolved(old, new) -> bool:
    """True when ``old`` is a lazy module (a ModuleType subclass standing in for one, as
    TensorFlow's and TensorBoard's loaders make) and ``new`` the module it loaded, which
    the import system put in its place on first use."""
    if type(old) is _MODULE or not _is(old, _MODULE) or not _is(new, _MODULE):
        return False
    name = object.__getattribute__(old, "__dict__").get("__name__")
    return bool(name) and sys.modules.get(name) is new and new.__dict__.get("__name__") == name


def _special(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and name not in _SPECIAL_KEPT


def digest(value, depth: int = 0):
    """A comparable picture of plain data (numbers, strings, tuples, lists, sets, dicts);
    other objects count by their type (a dict's item whose value is one is left out: the
    checker's caches)."""
    kind = type(value)
    if kind in _SIMPLE:
        return (kind.__name__, repr(value))
    if depth > 8:
        return ("deep",)
    if kind in (tuple, list):
        return (kind.__name__, tuple(digest(item, depth + 1) for item in value))
    if kind in (set, frozenset):
        return (kind.__name__, tuple(sorted(repr(digest(item, depth + 1)) for item in value)))
    if kind is dict:
        items = ((digest(k, depth + 1), digest(v, depth + 1)) for k, v in value.items())
        return ("dict", tuple(item for item in items if item[1][0] != "object"))
    return ("object", kind.__module__, kind.__qualname__)


def _members(cls) -> list:
    """Functions a class holds: its methods, static and class methods, property accessors."""
    found = []
    for value in _DICT_OF(cls).values():
        if _is(value, (staticmethod, classmethod)):
            value = value.__func__
        if _is(value, property):
            found += [f for f in (value.fget, value.fset, value.fdel) if type(f) is _FUNCTION]
        elif type(value) is _FUNCTION:
            found.append(value)
    return found


def _codes(code, into: set) -> None:
    """``code`` and every code object nested in it (inner functions, comprehensions)."""
    into.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _codes(const, into)


class Baseline:
    """The grading process as it was before any learner code ran."""

    def __init__(self):
        self.modules = {}
        classes, functions = {}, {}
        for name, module in list(sys.modules.items()):
            if name in EXEMPT or not issubclass(type(module), _MODULE):
                continue
            names = dict(module.__dict__)
            self.modules[name] = (module, type(module), names, _strict(name))
            for value in names.values():
                if _is(value, type) and id(value) not in classes:
                    classes[id(value)] = (value, dict(_DICT_OF(value)))
                    for member in _members(value):
                        functions[id(member)] = member
                elif type(value) is _FUNCTION:
                    functions[id(value)] = value
        self.classes = list(classes.values())
        self.functions = [
            (f, f.__code__, f.__defaults__, f.__kwdefaults__) for f in functions.values()
        ]
        self.data = {
            name: {k: digest(v) for k, v in names.items() if not _guarded(v)}
            for name, (_, _, names, strict) in self.modules.items()
            if strict
        }
        self.import_hooks = (list(sys.meta_path), list(sys.path_hooks))
        #: the checker's code: the one that may swap a dpkit function's code (switching)
        self.checker_code = set()
        for function, code, _, _ in self.functions:
            if function.__module__ and _strict(function.__module__):
                _codes(code, self.checker_code)

    def problems(self) -> list[str]:
        """What differs from the picture and could decide a check, in words."""
        found, adopted = [], []
        for name, (module, kind, names, strict) in self.modules.items():
            if sys.modules.get(name, _MISSING) is not module:
                found.append(f"sys.modules[{name!r}] was replaced or removed")
                continue
            if type(module) is not kind:
                found.append(f"the module {name} was given another class")
                continue
            now = module.__dict__
            for key, old in names.items():
                new = now.get(key, _MISSING)
                if new is not old and _resolved(old, new):
                    names[key] = new  # held from now on, and what it holds
                    adopted.append(new)
                elif new is not old and (strict or _guarded(old)):
                    what = "removed" if new is _MISSING else "replaced"
                    found.append(f"{name}.{key} was {what}")
            for key in now.keys() - names.keys():
                if (strict and not _special(key)) or (key in _BUILTIN_NAMES and name != "builtins"):
                    found.append(f"{name}.{key} was added")
            if strict:
                for key, old in self.data[name].items():
                    new = now.get(key, _MISSING)
                    if new is not _MISSING and not _guarded(new) and digest(new) != old:
                        found.append(f"{name}.{key} was changed in place")
        for module in adopted:
            name = module.__dict__["__name__"]
            self.modules.setdefault(name, (module, type(module), dict(module.__dict__), False))
        for cls, names in self.classes:
            now = _DICT_OF(cls)
            for key, old in names.items():
                new = now.get(key, _MISSING)
                if new is not old and _method_like(old):
                    found.append(f"{cls.__module__}.{cls.__qualname__}.{key} was replaced")
            for key in now.keys() - names.keys():
                if _special(key) and _method_like(now[key]):  # not a cache: __slotnames__
                    found.append(f"{cls.__module__}.{cls.__qualname__}.{key} was added")
        for function, code, defaults, kwdefaults in self.functions:
            if (
                function.__code__ is not code
                or function.__defaults__ is not defaults
                or function.__kwdefaults__ is not kwdefaults
            ):
                found.append(
                    f"the code or defaults of {function.__module__}.{function.__qualname__}"
                )
        meta_path, path_hooks = self.import_hooks
        if list(sys.meta_path) != meta_path or list(sys.path_hooks) != path_hooks:
            found.append("Python's import hooks (sys.meta_path, sys.path_hooks) were changed")
        if sys.gettrace() is not None or sys.getprofile() is not None:
            found.append("a trace or profile function was set")
        return found


# --- The audit hook -------------------------------------------------------------------------

_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {  # event: positions of its path arguments
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
    "shutil.copyfile": (1,),
    "shutil.move": (1,),
}
_SPAWN = ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.system", "pty.spawn")
_REFUSED = (
    "os.fork",
    "os.forkpty",
    "sys.settrace",
    "sys.setprofile",
    "sys.monitoring.register_callback",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.cdata",
    "ctypes.addressof",
)


def install_hook(protected, allowed, baseline: Baseline) -> None:
    """Refuse, from now on in this process, what :mod:`this module <grading_audit>` says.

    ``protected``: folders whose files must not change; ``allowed``: folders inside those
    that may (the submission's own); ``baseline``: whose functions' code only the checker's
    own code (:attr:`Baseline.checker_code`) may swap."""
    checker_code = baseline.checker_code
    held = {id(function) for function, _, _, _ in baseline.functions}
    realpath, fspath, basename = os.path.realpath, os.fspath, os.path.basename
    sep, executable, getframe = os.sep, realpath(sys.executable), sys._getframe

    def under(path, roots) -> bool:
        return any(path == r or path.startswith(r.rstrip(sep) + sep) for r in roots)

    protected = [realpath(p) for p in protected]
    allowed = [realpath(p) for p in allowed]

    def guarded_path(path) -> bool:
        if isinstance(path, int):
            return False  # a file descriptor: opened (and checked) before
        try:
            path = realpath(fspath(path))
        except Exception:
            return True  # a path that cannot be read is refused
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return under(path, protected) and not under(path, allowed)

    def program_allowed(argv) -> bool:
        argv = [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in argv or ()]
        if not argv:
            return False
        if realpath(argv[0]) == executable or basename(argv[0]).startswith("python"):
            return len(argv) > 2 and argv[1] == "-m" and argv[2] in PROGRAMS
        return basename(argv[0]) in READERS

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            writes = (
                (flags & _WRITE) if isinstance(flags, int) else any(c in str(mode) for c in "wax+")
            )
            if writes and guarded_path(path):
                raise PermissionError(f"grading: writing {path} is not allowed while grading")
        elif event in _PATH_EVENTS:
            for i in _PATH_EVENTS[event]:
                if i < len(args) and guarded_path(args[i]):
                    raise PermissionError(
                        f"grading: changing {args[i]} is not allowed while grading"
                    )
        elif event == "sqlite3.connect":
            if args and args[0] not in (":memory:", b":memory:", "") and guarded_path(args[0]):
                raise PermissionError(f"grading: opening the database {args[0]} is not allowed")
        elif event in _SPAWN:
            argv = {"subprocess.Popen": 1, "os.posix_spawn": 1, "os.exec": 1, "os.spawn": 2}
            if event in argv and program_allowed(args[argv[event]]):
                return
            raise PermissionError(f"grading: starting programs is not allowed ({event})")
        elif event in _REFUSED:
            raise PermissionError(f"grading: {event} is not allowed while grading")
        elif event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__":
            target = args[0]
            if id(target) in held and getframe(1).f_code not in checker_code:
                raise PermissionError(f"grading: swapping the code of {target.__qualname__}")

    sys.addaudithook(hook)
