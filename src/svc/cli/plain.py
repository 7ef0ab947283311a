"""Plain help and plain string parameters for svc's commands, through typer's public classes only.

Typer labels every parameter with its Python type in help (`NAME <str>`, `--json <bool>`, `{DIR}`
in the usage line); click's own help does not, and svc's help reads as click's does: arguments and
option values by their placeholder (`NAME`, `URL`), `NAME` rather than `{NAME}` in the usage line.

Typer also checks every parameter value with a pydantic TypeAdapter, built on first use; pydantic's
import alone is about as long as the rest of `svc whoami`'s start-up. A string from the command line
or the environment, and a flag's True/False, need no checking: those parameters pass their value
through as click gives it. Numbers, paths, choices and lists keep typer's check.

Both are done by subclasses of typer's public `TyperCommand`, `TyperGroup`, `TyperArgument` and
`TyperOption` (no instance is patched, no private attribute read or set): `command_of(app)` names
`PlainCommand`/`PlainGroup` as the class of every command and group of a Typer app (its `cls`, as
`app.command(cls=...)` would), and those rebuild each parameter typer made as a `PlainArgument` or
`PlainOption`, with the parameter's own public constructor and the values it holds.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import DefaultPlaceholder


class _AsItIs:
    """The value as click gives it: a string from the command line or the environment, a flag's bool."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        return value


_AS_IT_IS = _AsItIs()


def _as_it_is(param: TyperArgument | TyperOption) -> bool:
    """A single string, or a flag that no environment variable sets (click gives it True, False or None)."""
    annotation = param.type_descriptor.annotation
    if param.nargs != 1 or param.multiple:
        return False
    if annotation is str:
        return True
    return annotation is bool and bool(getattr(param, "is_flag", False)) and not param.envvar


class PlainArgument(TyperArgument):
    """An argument shown by its placeholder alone (`NAME`, `[NAME]`, `FILES...`), never its type."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        label = (self.metavar or self.name.upper()) + ("..." if self.nargs != 1 else "")
        return [label if self.required else f"[{label}]"]

    def get_runtime_param(self) -> Any:
        return _AS_IT_IS if _as_it_is(self) else super().get_runtime_param()


class PlainOption(TyperOption):
    """An option whose value is shown by its placeholder (`--org ORG`), never its type."""

    def get_runtime_param(self) -> Any:
        return _AS_IT_IS if _as_it_is(self) else super().get_runtime_param()


def plain_param(param: Any) -> Any:
    """`param` rebuilt as a PlainArgument or PlainOption (any other parameter as it is), with the values it
    holds: its declarations (the option's secondary `--no-x` ones too), and a placeholder when it has
    none: the name in capitals. Typer's shell completion is not carried over (svc turns it off)."""
    if isinstance(param, PlainArgument | PlainOption) or not isinstance(param, TyperArgument | TyperOption):
        return param
    common: dict[str, Any] = {"type_descriptor": param.type_descriptor, "required": param.required,
                              "default": param.default, "envvar": param.envvar}
    if isinstance(param, TyperArgument):
        return PlainArgument(
            **common, param_decls=[param.name], callback=param.callback, nargs=param.nargs,
            metavar=param.metavar or param.name.upper(), expose_value=param.expose_value, is_eager=param.is_eager,
            show_default=param.show_default, show_choices=param.show_choices,
            show_envvar=param.show_envvar, help=param.help, hidden=param.hidden, min=param.min, max=param.max,
            rich_help_panel=param.rich_help_panel)
    metavar = param.metavar
    if metavar is None and not param.is_flag and not param.count:
        metavar = param.name.upper()
    # " /--no-x" declares a secondary option alone (TyperOption splits a declaration at "/").
    decls = [param.name, *param.opts, *(f" /{opt}" for opt in param.secondary_opts)]
    return PlainOption(
        **common, param_decls=decls, callback=param.callback, nargs=param.nargs, metavar=metavar,
        expose_value=param.expose_value, is_eager=param.is_eager,
        show_default=param.show_default, prompt=param.prompt if param.prompt is not None else False,
        confirmation_prompt=param.confirmation_prompt, prompt_required=param.prompt_required,
        hide_input=param.hide_input, is_flag=param.is_flag, multiple=param.multiple, count=param.count,
        allow_from_autoenv=param.allow_from_autoenv, help=param.help, hidden=param.hidden,
        show_choices=param.show_choices, show_envvar=param.show_envvar, min=param.min, max=param.max,
        rich_help_panel=param.rich_help_panel)


class _Plain:
    """Parameters (and `--help`) as PlainArgument and PlainOption. They are rebuilt when first asked
    for: `svc --help` builds every command for its one line of help, and asks none for its parameters."""

    _given: list[Any]
    _rebuilt: list[Any] | None = None
    _plain_help: tuple[Any, Any] | None = None

    @property
    def params(self) -> list[Any]:
        if self._rebuilt is None:
            self._rebuilt = [plain_param(p) for p in self._given]
        return self._rebuilt

    @params.setter
    def params(self, value: list[Any]) -> None:
        self._given, self._rebuilt = list(value), None

    def get_help_option(self, ctx: Any) -> Any:
        """Typer makes `--help` (a TyperOption) when first asked, and keeps it; so does this with its
        PlainOption (click orders the eager options by the identity of the object)."""
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is None:
            return None
        if self._plain_help is None or self._plain_help[0] is not option:
            self._plain_help = (option, plain_param(option))
        return self._plain_help[1]


class PlainCommand(_Plain, TyperCommand):
    """A command whose parameters (and `--help`) are PlainArgument and PlainOption."""


class PlainGroup(_Plain, TyperGroup):
    """A group whose own parameters (and `--help`) are PlainArgument and PlainOption (its commands are
    PlainCommand and PlainGroup when built by command_of)."""


def _unset(cls: Any, default: type) -> bool:
    """No class named: typer's placeholder, or its own class (`command()` names TyperCommand itself)."""
    return cls is None or isinstance(cls, DefaultPlaceholder) or cls is default


def use_plain_classes(app: typer.Typer) -> typer.Typer:
    """Name PlainGroup and PlainCommand as the class of `app`, its commands and its groups, at every
    depth, where no other class was named (typer's `cls`, as given to `Typer()`, `command()`, `add_typer()`)."""
    if _unset(app.info.cls, TyperGroup):
        app.info.cls = PlainGroup
    for command in app.registered_commands:
        if _unset(command.cls, TyperCommand):
            command.cls = PlainCommand
    for group in app.registered_groups:
        if _unset(group.cls, TyperGroup):
            group.cls = PlainGroup
        if group.typer_instance is not None:
            use_plain_classes(group.typer_instance)
    return app


def command_of(app: typer.Typer) -> Any:
    """The click command of a Typer app (typer.main.get_command), with plain help and plain strings."""
    return typer.main.get_command(use_plain_classes(app))
