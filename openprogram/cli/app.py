"""The root ``openprogram`` app; command groups attach to it.

Usage errors (an unknown option, a malformed value) leave like every other error: one line
on stderr and exit 2, instead of click's boxed panel, with any credential in it removed.

Help reads the way click writes it, for every command of the tree: an argument is its name
in capitals (``Usage: openprogram run [OPTIONS] PROMPT``, ``[NAME]`` when optional), and a
flag shows no value placeholder (``--json``, not ``--json <bool>``). The typer release this
was written against shows ``{prompt}`` and ``<bool>`` instead; the root group puts every
command it holds under :class:`PlainHelpCommand` / :class:`PlainHelpGroup`, which fix that."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from openprogram import __version__
from openprogram.cli.output import EXIT_FAILURE


def plain_params(params: list[Any]) -> list[Any]:
    """``params``, each argument named in capitals and each flag without a metavar."""
    for param in params:
        if isinstance(param, TyperArgument) and param.metavar is None and param.name:
            param.metavar = param.name.upper()
        elif isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


def plain_usage_pieces(command: Any, ctx: Any) -> list[str]:
    """The usage line's pieces: ``[OPTIONS]``, then ``NAME`` / ``[NAME]`` / ``NAME...``."""
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if isinstance(param, TyperArgument):
            name = param.metavar or str(param.name).upper()
            piece = name if param.required else f"[{name}]"
            pieces.append(piece if param.nargs == 1 else f"{piece}...")
        else:
            pieces.extend(param.get_usage_pieces(ctx))
    return pieces


class PlainHelpCommand(TyperCommand):
    """A command whose help shows ``PROMPT`` and bare flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        return plain_params(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return plain_usage_pieces(self, ctx)


class PlainHelpGroup(TyperGroup):
    """A command group whose help shows bare flags, like :class:`PlainHelpCommand`."""

    def get_params(self, ctx: Any) -> list[Any]:
        return plain_params(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [*plain_usage_pieces(self, ctx), self.subcommand_metavar]


def reflowed(text: str | None) -> str | None:
    """``text`` with each paragraph on one line, for the help formatter to wrap.

    Docstrings are wrapped for the source file; the rich help formatter keeps those line
    breaks, so at another width every line would end early with a word left on its own."""
    if not text:
        return text
    paragraphs = [" ".join(paragraph.split()) for paragraph in text.strip().split("\n\n")]
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)


def use_plain_help(group: TyperGroup) -> None:
    """Put every command under ``group``, at any depth, under the plain-help classes, with
    its help text reflowed (:func:`reflowed`).

    Only commands of typer's own classes are changed (a command of another class keeps its
    help as it is); the plain classes add no state, so changing the class is safe."""
    for command in group.commands.values():
        command.help = reflowed(command.help)
        if type(command) is TyperCommand:
            command.__class__ = PlainHelpCommand
        elif type(command) is TyperGroup:
            command.__class__ = PlainHelpGroup
        if isinstance(command, TyperGroup):
            use_plain_help(command)


class OneLineErrorsGroup(PlainHelpGroup):
    """The root group: usage errors are one ``error:`` line (exit 2), and every command's
    help is plain (:func:`use_plain_help`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        use_plain_help(self)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(
                args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra
            )
        try:
            result = super().main(
                args, prog_name, complete_var, False, windows_expand_args, **extra
            )
        except typer.Abort:
            sys.stderr.write("error: aborted\n")
            sys.exit(EXIT_FAILURE)
        except Exception as error:
            message = getattr(error, "format_message", None)
            code = getattr(error, "exit_code", None)
            if message is None or not isinstance(code, int):
                raise
            if is_no_arguments_help(error):
                sys.stdout.write(message() + "\n")  # no arguments: show the help
            else:
                from openprogram.recording.redaction import SecretRedactor

                # A mistyped option's value may be a URL with a password, or a key.
                one_line = SecretRedactor().redact_text(" ".join(str(message()).split()))
                sys.stderr.write(f"error: {one_line} (see --help)\n")
            sys.exit(code)
        sys.exit(result if isinstance(result, int) else 0)


def is_no_arguments_help(error: Exception) -> bool:
    """Whether ``error`` is what click (8.2 and later) raises for a group called with no
    arguments, so that its help is shown. typer either uses click or carries a copy of its
    own (``typer._click``), so the class is looked up in the module that raised the error;
    older clicks print the help themselves and raise nothing."""
    exceptions = sys.modules.get(type(error).__module__)
    no_arguments = getattr(exceptions, "NoArgsIsHelpError", None)
    return isinstance(no_arguments, type) and isinstance(error, no_arguments)


app = typer.Typer(
    name="openprogram",
    cls=OneLineErrorsGroup,
    help="Record LLM agent sessions at the provider boundary and replay them offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # -h in every command too
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"openprogram {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", callback=_show_version, is_eager=True
    ),
) -> None:
    """Record LLM agent sessions at the provider boundary and replay them offline."""


def _add_groups() -> None:
    from openprogram.cli import demo, exec, run, serve
    from openprogram.cli.recordings import recordings_app

    run.register(app)
    exec.register(app)
    serve.register(app)
    demo.register(app)
    app.add_typer(recordings_app, name="recordings")


_add_groups()


def main() -> None:
    """The console-script entry point. openprogram's own commands never run in the
    configured record/replay mode (``openprogram run`` applies it at the provider registry,
    as its runtime starts): where the start-up hook could not tell this process was one of
    them (``python -c "from openprogram.cli import main; main()"``), it is taken off here."""
    startup = sys.modules.get("openprogram.activation.startup")
    if startup is not None:
        startup.stop_configured_mode()
    app(prog_name="openprogram")
