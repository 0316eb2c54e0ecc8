"""The active functions, indexed by the event patterns that trigger them.

Admission runs for every stored event, so it reads this in-memory index rather than the
database; it is rebuilt from the store whenever a sync changes the catalog.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from weir.platform.foundation.vocabulary import InProgress, PauseMode
from weir.platform.functions import CronTrigger, EventTrigger, FunctionConfig, trigger_patterns


class StoredFunction(Protocol):
    """What the registry needs of a stored function (the store's record has it): the registry
    sits below the store, so it names the shape rather than importing the record."""

    @property
    def id(self) -> str: ...
    @property
    def app_id(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def version(self) -> int: ...
    @property
    def archived(self) -> bool: ...
    @property
    def app_sdk(self) -> str: ...


class StoredPause(Protocol):
    """A paused function, as the store records it (`store.records.pauses.FunctionPause`)."""

    @property
    def function_id(self) -> str: ...
    @property
    def mode(self) -> PauseMode: ...
    @property
    def in_progress(self) -> InProgress: ...
    @property
    def paused_at(self) -> int: ...
    @property
    def paused_by(self) -> str: ...


@dataclass(frozen=True)
class Function:
    id: str
    app_id: str
    slug: str
    config: FunctionConfig
    version: int
    archived: bool = False
    app_sdk: str = ""  # the `sdk` its app registered with: weir.sdk binds its answers

    @property
    def url(self) -> str:
        return self.config.url


@dataclass
class Registry:
    by_id: dict[str, Function] = field(default_factory=dict)
    by_slug: dict[str, Function] = field(default_factory=dict)
    by_app: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # ids
    by_pattern: dict[str, list[tuple[Function, EventTrigger]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    version: int = 0
    # The paused functions by id: read with the functions, so every process holds them at no
    # cost per claim or event, and reloads them as it reloads the functions.
    paused: dict[str, StoredPause] = field(default_factory=dict)
    # By event name: the expressions admitting such an event may evaluate (admission fills it).
    declared: dict[str, tuple[Any, ...]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(
        cls, stored: Iterable[StoredFunction], version: int, paused: Iterable[StoredPause] = ()
    ) -> "Registry":
        registry = cls(version=version, paused={p.function_id: p for p in paused})
        for fn in stored:
            registry.add(_function(fn))
        return registry

    def add(self, fn: Function) -> None:
        self.declared.clear()
        self.by_id[fn.id] = fn
        self.by_app[fn.app_id].append(fn.id)  # archived too: their runs still call the app
        if fn.archived:  # removed from its app: runs finish, nothing new starts
            return
        self.by_slug[fn.slug] = fn
        for trigger in fn.config.triggers:
            if isinstance(trigger, EventTrigger):
                self.by_pattern[trigger.event].append((fn, trigger))

    def slug_of(self, function_id: str) -> str:
        """The function's slug, as the API and events name it; its id if it is not known."""
        fn = self.by_id.get(function_id)
        return fn.slug if fn is not None else function_id

    def triggered_by(self, event_name: str) -> list[tuple[Function, list[EventTrigger]]]:
        """Each function with every trigger whose pattern names this event; admission starts
        a function once per event, on the first of them whose expression holds."""
        grouped: dict[str, tuple[Function, list[EventTrigger]]] = {}
        for pattern in trigger_patterns(event_name):
            for fn, trigger in self.by_pattern.get(pattern, ()):
                grouped.setdefault(fn.id, (fn, []))[1].append(trigger)
        return [grouped[key] for key in sorted(grouped)]

    def skips(self, function_id: str) -> bool:
        """Whether the function is paused so that the events triggering it start no run."""
        pause = self.paused.get(function_id) if self.paused else None
        return pause is not None and pause.mode == PauseMode.SKIP

    def functions_of(self, app_id: str) -> list[str]:
        """The ids of the app's functions, archived ones among them."""
        return self.by_app.get(app_id, [])

    def crons(self) -> list[tuple[Function, CronTrigger]]:
        return [
            (fn, t)
            for fn in self.by_id.values()
            for t in fn.config.triggers
            if isinstance(t, CronTrigger)
        ]


def _function(stored: StoredFunction) -> Function:
    return Function(
        id=stored.id,
        app_id=stored.app_id,
        slug=stored.slug,
        config=FunctionConfig.from_json(stored.config),
        version=stored.version,
        archived=stored.archived,
        app_sdk=stored.app_sdk,
    )
