"""Component registry: one class per config option, with its config schema derived from it.

Decorate a component class with ``@component("retriever", "bm25")``. :func:`rr.config.composition.register_configs`
turns each registered class's constructor parameters into a dataclass schema stored in Hydra's
ConfigStore as ``<group>/<name>_schema``; the option's YAML lists that schema first in its
defaults, so a misspelled or unknown key fails when the config is composed, not after a GPU hour.
Adding a component is therefore one class (decorated) plus one YAML.

Schemas follow inheritance: a constructor that takes ``**kwargs`` (and hands them to
``super().__init__`` by keyword) takes its parents' parameters too, so :func:`init_parameters`
walks the MRO while the ``__init__`` it meets has ``**kwargs``. A subclass declares only what it
adds or whose default it changes (its own annotation and default win); its own parameters come
first, then its parents' in MRO order (the order the one-class signatures had). This small walk
was chosen over dataclass schemas extended by inheritance (Hydra's structured-config tutorial,
hydra-zen's ``builds(..., populate_full_signature=True)``): the constructor stays the one place a
parameter, its type and its default are written, there is no second class per component to
keep in step, and it needs no new dependency. A subclass narrower than its parent names the
inherited parameters it does not take in ``component(..., drop=...)``.

Hydra's instantiate keys (``_recursive_``, ``_convert_``, ``_partial_``) are no constructor
parameters: an option whose YAML sets one (``_recursive_: false`` keeps a nested config node,
such as a judge's generator, unbuilt) names it in ``component(..., hydra_keys=...)``, which admits
the key in the schema with Hydra's own default.

Every registry of rr is one type, :class:`Registry`: the components of each config group
(:data:`COMPONENTS`), the metrics (:data:`rr.metrics.METRICS`), the report sections
(:data:`rr.reporting.SECTIONS`) and the ``rr`` subcommands (:data:`rr.commands.cli.SUBCOMMANDS`).
A registry maps a name to an object of one base type (checked when the object is registered or
loaded), holds lazy ``"module:name"`` entries that import their module only when looked up, and
knows where each entry came from (:data:`BUILT_IN`, or the plugin entry point that registered it).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Any, Generic, Optional, TypeVar

from omegaconf import MISSING

T = TypeVar("T")

#: The origin of an entry registered by rr itself.
BUILT_IN = "built-in"
#: Origins of the plugin imports in progress (innermost last; :func:`registering_from`).
_LOADING: list[str] = []


@contextmanager
def registering_from(origin: str) -> Iterator[None]:
    """Entries registered inside this block without an explicit origin come from ``origin`` (used by
    :func:`rr.plugins.import_plugin_components` around each plugin's import)."""
    _LOADING.append(origin)
    try:
        yield
    finally:
        _LOADING.pop()


def origin_of(obj: Any) -> str:
    """Where ``obj`` comes from: the plugin being imported (:func:`registering_from`), else
    :data:`BUILT_IN` for an object defined in ``rr``, else ``"module <its module>"``."""
    if _LOADING:
        return _LOADING[-1]
    module = str(getattr(obj, "__module__", "") or "")
    return BUILT_IN if module == "rr" or module.startswith("rr.") else f"module {module}"


@dataclasses.dataclass
class _Entry(Generic[T]):
    origin: str
    ref: str = ""  # "module:name" of a lazy entry
    value: T | None = None
    loaded: bool = False


class Registry(MutableMapping[str, T]):
    """Name -> object of one base type, each entry loaded or lazy, with where it came from.

    A mapping: ``name in reg`` and iteration never import a lazy entry's module; ``reg[name]``
    does, once, and checks the object against the base type.

    Args:
        kind: What an entry is, for messages (``"metric"``, ``"report section"``).
        base: Type every entry must be an instance of (``type`` for classes, ``Callable`` for
            functions).
        key: Identity of an entry's object. With it, registering a name again with an object of
            another identity raises (the same object re-registered, as a module imported twice
            does, is fine); without it, a name registered again is replaced.
    """

    def __init__(self, kind: str, base: Any = object, *, key: Callable[[T], str] | None = None) -> None:
        self.kind = kind
        self.base = base
        self._key = key
        self._entries: dict[str, _Entry[T]] = {}

    def _check(self, name: str, value: Any) -> T:
        if not isinstance(value, self.base):
            what = getattr(self.base, "__name__", str(self.base))
            raise TypeError(f"{self.kind} {name!r}: {value!r} is not a {what}")
        return value

    def register(self, name: str, value: T, *, origin: str | None = None) -> T:
        """Register ``value`` as ``name`` (origin: :func:`origin_of` unless given); return it.

        Raises:
            TypeError: ``value`` is not of the registry's base type.
            ValueError: ``name`` already names an object of another identity (registries with ``key``).
        """
        self._check(name, value)
        old = self._entries.get(name)
        if old is not None and self._key is not None:
            before = self._key(old.value) if old.loaded else old.ref.replace(":", ".")  # type: ignore[arg-type]
            if before != self._key(value):
                raise ValueError(f"{self.kind} {name!r} is already registered to {before}")
        self._entries[name] = _Entry(origin or origin_of(value), value=value, loaded=True)
        return value

    def register_lazy(self, name: str, ref: str, *, origin: str = BUILT_IN) -> None:
        """Register ``name`` as ``"module:attribute"``, imported at its first lookup."""
        module, sep, attr = ref.partition(":")
        if not (module and sep and attr):
            raise ValueError(f"{self.kind} {name!r}: {ref!r} is not 'module:name'")
        self._entries[name] = _Entry(origin, ref=ref)

    def __getitem__(self, name: str) -> T:
        entry = self._entries[name]
        if not entry.loaded:
            module, _, attr = entry.ref.partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
            entry.value, entry.loaded = self._check(name, obj), True
        return entry.value  # type: ignore[return-value]

    def __setitem__(self, name: str, value: T) -> None:
        self.register(name, value)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def origin(self, name: str) -> str:
        """Where entry ``name`` came from: :data:`BUILT_IN`, a plugin's entry point, or a module."""
        return self._entries[name].origin

    def reference(self, name: str) -> str:
        """``"module:name"`` of entry ``name`` (its lazy reference, or where its object is defined)."""
        entry = self._entries[name]
        if not entry.loaded:
            return entry.ref
        v = entry.value
        return f"{getattr(v, '__module__', '?')}:{getattr(v, '__qualname__', type(v).__qualname__)}"

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._entries)})"


def import_builtins(*packages: str) -> None:
    """Import every module of rr's ``packages`` (a package and all its submodules, walked with
    :func:`pkgutil.walk_packages` in name order; a plain module: itself), so that the decorators in them
    (``@component``, ``@register_metric``, ``@section``) register rr's built-in names. No list names the
    modules: a built-in is one decorated class or function in any module of its package. Every registry
    filled by decorators walks its packages: :data:`COMPONENT_PACKAGES` (:func:`rr.config.import_components`),
    ``rr.metrics`` (its import) and ``rr.reporting`` (:func:`rr.reporting.registry.sections`)."""
    for name in packages:
        package = importlib.import_module(name)
        for found in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=f"{name}."):
            importlib.import_module(found.name)


#: group -> option name -> class (one :class:`Registry` per config group)
COMPONENTS: dict[str, Registry[type]] = {}

#: The packages (and the module) of rr's components, one per kind; :func:`import_builtins` walks them. Their
#: modules stay light to import: heavy libraries are imported inside the components' methods.
COMPONENT_PACKAGES = (
    "rr.data",
    "rr.retrieval",
    "rr.generation",
    "rr.strategies",
    "rr.judges",
    "rr.perturbations",
    "rr.tracking",
)


#: Hydra's instantiate keys an option's YAML may set, with Hydra's defaults.
HYDRA_KEYS: dict[str, tuple[Any, Any]] = {
    "_recursive_": (bool, True),
    "_convert_": (str, "none"),
    "_partial_": (bool, False),
}


def component(group: str, name: str, *, drop: Sequence[str] = (), hydra_keys: Sequence[str] = ()):
    """Register ``cls`` as option ``name`` of config group ``group`` (e.g. ``"retriever"``).

    Args:
        drop: Parameters of the parents' constructors that this class does not take, though its
            ``**kwargs`` reach them (left out of its schema and its subclasses').
        hydra_keys: Hydra instantiate keys (:data:`HYDRA_KEYS`) the option's YAML may set;
            subclasses inherit them.
    """
    unknown = [k for k in hydra_keys if k not in HYDRA_KEYS]
    if unknown:
        raise ValueError(
            f"component {group}/{name}: hydra_keys must be among {tuple(HYDRA_KEYS)}, got {unknown}"
        )

    def wrap(cls: type) -> type:
        if group not in COMPONENTS:
            COMPONENTS[group] = Registry(f"{group} component", type)
        COMPONENTS[group].register(name, cls)
        cls.__rr_group__ = group  # type: ignore[attr-defined]
        cls.__rr_option__ = name  # type: ignore[attr-defined]
        if drop:
            cls.__rr_drop__ = tuple(drop)  # type: ignore[attr-defined]
        if hydra_keys:
            cls.__rr_hydra_keys__ = tuple(hydra_keys)  # type: ignore[attr-defined]
        return cls

    return wrap


_SIMPLE = (int, float, str, bool)


def _schema_type(tp: Any) -> Any:
    """Map a Python annotation to one OmegaConf can validate; ``Any`` where it cannot."""
    if tp in _SIMPLE:
        return tp
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):
            inner = _schema_type(rest[0])
            return Optional[inner] if inner is not Any else Any  # noqa: UP045 (OmegaConf needs typing.Optional)
        return Any
    if (
        origin in (list, tuple)
        and len(args) >= 1
        and args[0] in _SIMPLE
        and (origin is list or args[-1] is Ellipsis)
    ):
        return list[args[0]]  # type: ignore[valid-type]
    return Any


def _copier(value: Any) -> Any:
    """A default factory returning a fresh copy of a mutable default."""
    return lambda: list(value) if isinstance(value, tuple) else value.copy()


def init_parameters(cls: type) -> dict[str, tuple[Any, Any]]:
    """``name -> (annotation, default)`` of every parameter an instance of ``cls`` is built with.

    The class's own ``__init__`` parameters, then, while the ``__init__`` met has ``**kwargs``,
    those of the next class up the MRO that defines one. A name declared more than once takes
    the most derived annotation and default and stays where the uppermost class puts it (a
    subclass that changes a default does not move the field); names only a subclass declares
    come first. A name in a class's ``drop`` is skipped in the classes above it. ``default`` is
    ``inspect.Parameter.empty`` for a required parameter.
    """
    found: dict[str, tuple[Any, Any]] = {}
    levels: list[list[str]] = []  # each walked class's parameter names, most derived first
    dropped: set[str] = set()
    for klass in cls.__mro__:
        if klass is object:
            break
        init = klass.__dict__.get("__init__")
        if init is not None:
            hints = typing.get_type_hints(init)
            forwards, names = False, []
            for pname, p in list(inspect.signature(init).parameters.items())[1:]:
                if p.kind is p.VAR_KEYWORD:
                    forwards = True
                elif p.kind is not p.VAR_POSITIONAL and pname not in dropped:
                    names.append(pname)
                    found.setdefault(pname, (hints.get(pname, Any), p.default))
            levels.append(names)
            if not forwards:
                break
        dropped.update(klass.__dict__.get("__rr_drop__", ()))
    return {
        n: found[n]
        for i, names in enumerate(levels)
        for n in names
        if not any(n in upper for upper in levels[i + 1 :])
    }


def schema_for(cls: type) -> type:
    """A dataclass with ``_target_`` plus one field per constructor parameter of ``cls``
    (:func:`init_parameters`) and per Hydra key its ``component`` registration admits."""
    fields: list[tuple[str, Any, Any]] = [
        ("_target_", str, dataclasses.field(default=f"{cls.__module__}.{cls.__qualname__}"))
    ]
    for pname, (hint, value) in init_parameters(cls).items():
        if value is inspect.Parameter.empty:
            default: Any = dataclasses.field(default=MISSING)
        elif isinstance(value, (list, dict, tuple)):
            default = dataclasses.field(default_factory=_copier(value))
        else:
            default = dataclasses.field(default=value)
        fields.append((pname, _schema_type(hint), default))
    for key in getattr(cls, "__rr_hydra_keys__", ()):
        tp, value = HYDRA_KEYS[key]
        fields.append((key, tp, dataclasses.field(default=value)))
    return dataclasses.make_dataclass(f"{cls.__name__}Schema", fields)
