"""What a --agent-cmd names: its programs and scripts, resolved where pytest was started.

The command runs through /bin/sh with the trial's workspace as its working directory, inside a
sandbox that shows little of the machine. So that `python my_agent.py` runs as written, the
words that name a program, and the script an interpreter is given, are resolved from the
directory pytest was started in and replaced by absolute paths; a Python interpreter is asked
where it lives (a pyenv shim or a venv launcher does not run inside a sandbox, the interpreter
behind it does). A module `python -m NAME` runs from there is shown, and its directory goes on
PYTHONPATH. The result lists what the sandbox must show read-only for the command to run.

Only plain words are touched (no quotes, escapes, variables or globs), and nothing after a
here-document operator: the rest of the command is the shell's, as written. The one quoted word
read is a shell's `-c '…'` command, resolved the same way as a command of its own.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentbench.sandbox.base import within
from pytest_agentbench.sandbox.bwrap import (
    agent_exposures,
    covered,
    install_root,
    shebang_interpreter,
)

PLAIN = re.compile(r"[A-Za-z0-9_./+@%:,=-]+")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
RESERVED = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "exec"}
# The shell's own commands: never looked up on PATH, so never "not found".
BUILTINS = {
    ":",
    ".",
    "[",
    "alias",
    "break",
    "cd",
    "command",
    "continue",
    "echo",
    "eval",
    "exit",
    "export",
    "false",
    "getopts",
    "hash",
    "kill",
    "local",
    "printf",
    "pwd",
    "read",
    "readonly",
    "return",
    "set",
    "shift",
    "source",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
    "for",
    "case",
    "fi",
    "done",
    "esac",
    "}",
}
SEPARATORS = ";&|()\n"
REDIRECTIONS = "<>"
INTERPRETER = re.compile(
    r"(python|pypy|node|bun|deno|ruby|perl|php|bash|sh|dash|zsh|ksh|Rscript)[0-9.]*"
)
PYTHON = re.compile(r"(python|pypy)[0-9.]*")
SHELL = re.compile(r"(bash|sh|dash|zsh|ksh)")
SINGLE_QUOTED = re.compile(r"'([^']*)'")
NO_SCRIPT = {"-c", "-m", "-e", "-p", "-", "--eval", "--print"}  # code or a module follows
OPTION_WITH_VALUE = {"-W", "-X", "-r", "--require", "--import"}
PREFIXES_CODE = "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)"
QUERY_TIMEOUT = 30.0


@dataclass
class Word:
    start: int
    end: int
    text: str
    plain: bool
    command: int  # which simple command of the line the word belongs to
    first: bool  # in command position: the program of its simple command


@dataclass
class ResolvedCommand:
    """The command with resolved words, and the paths the sandbox must show read-only."""

    text: str
    exposures: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # programs it names that do not exist
    # Relative paths of programs and scripts not found from base: perhaps the workspace's own.
    unresolved: list[str] = field(default_factory=list)
    python_path: list[str] = field(default_factory=list)  # where `python -m NAME` finds NAME


def split_words(command: str) -> list[Word]:
    """The words of a shell command line with their positions, up to a here-document."""
    words: list[Word] = []
    index, simple, expect_program, redirect_target = 0, 0, True, False
    while index < len(command):
        char = command[index]
        if char in " \t":
            index += 1
            continue
        if command.startswith("<<", index):
            break  # a here-document body follows: it is data, not words
        if char in SEPARATORS or char in REDIRECTIONS:
            index += 1
            redirect_target = char in REDIRECTIONS or command.startswith("&>", index - 1)
            if redirect_target:  # the whole operator: >> >& <& <> >| &> &>>
                while index < len(command) and command[index] in "<>&|":
                    index += 1
            if not redirect_target:
                simple, expect_program = simple + 1, True
            continue
        start, plain, quote = index, True, ""
        while index < len(command):
            char = command[index]
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote, plain = char, False
            elif char == "\\":
                index, plain = index + 1, False
            elif char in " \t" or char in SEPARATORS or char in REDIRECTIONS:
                break
            index += 1
        text = command[start:index]
        plain = plain and PLAIN.fullmatch(text) is not None
        if redirect_target:
            redirect_target = False
            continue
        first = expect_program and not ASSIGNMENT.match(text)
        words.append(Word(start, index, text, plain, simple, first))
        expect_program = (expect_program and not first) or (first and text in RESERVED)
    return words


def _script_word(words: list[Word], program: int) -> Word | None:
    """The script an interpreter at words[program] is given, if any."""
    skip = False
    for word in words[program + 1 :]:
        if word.command != words[program].command or word.first:
            return None
        if skip:
            skip = False
        elif word.text in NO_SCRIPT:
            return None
        elif word.text in OPTION_WITH_VALUE:
            skip = True
        elif not word.text.startswith("-"):
            return word
    return None


def _module_word(words: list[Word], program: int) -> Word | None:
    """The module a Python interpreter at words[program] runs with -m, if any."""
    after_m = False
    for word in words[program + 1 :]:
        if word.command != words[program].command or word.first:
            return None
        if after_m:
            return word
        after_m = word.text == "-m"
    return None


def _shell_command(words: list[Word], program: int) -> tuple[Word, str] | None:
    """The single-quoted word a shell at words[program] is given with -c, and the command
    inside the quotes, if any."""
    following = [w for w in words[program + 1 : program + 3] if w.command == words[program].command]
    if len(following) == 2 and following[0].text == "-c":
        match = SINGLE_QUOTED.fullmatch(following[1].text)
        return (following[1], match[1]) if match else None
    return None


def _module_path(base: Path, module: str) -> Path | None:
    """The package directory or module file from base that `python -m module` would run."""
    top = module.split(".")[0]
    for path in (base / top, base / f"{top}.py"):
        if path.exists():
            return path.absolute()
    return None


def _relative_file(text: str) -> bool:
    """Whether an interpreter's argument names a file by a relative path (`my_agent.py`,
    `lib/run`), not a subcommand (`bun run`)."""
    return not text.startswith("/") and ("/" in text or bool(Path(text).suffix))


def _defined_in(command: str, name: str) -> bool:
    """Whether the command line may make name a command itself: a function of that name, or
    a PATH it changes."""
    return "PATH=" in command or re.search(rf"\b{re.escape(name)}\s*\(\s*\)", command) is not None


def python_exposures(found: str, environ: dict[str, str], cwd: Path) -> tuple[str, list[Path]]:
    """The interpreter a Python command word runs (through any shim) and its prefixes."""
    try:
        done = subprocess.run(
            [found, "-c", PREFIXES_CODE],
            env=environ,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=QUERY_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return found, []
    lines = done.stdout.decode(errors="replace").splitlines()
    if done.returncode != 0 or len(lines) != 3 or not all(lines):
        return found, []
    executable, prefix, base_prefix = lines
    roots = [Path(prefix).resolve(), Path(base_prefix).resolve()]
    real = Path(executable).resolve()
    if not any(within(real, root) for root in roots):
        roots.append(real.parent)
    if not any(within(Path(executable), root) for root in roots):
        executable = str(real)  # a link outside the install (a shim dir): run what it names
    return executable, list(dict.fromkeys(roots))


def program_exposures(
    program: Path, environ: dict[str, str], hidden: list[Path], *, named: bool, host: bool
) -> list[Path]:
    """What a program needs shown: a program the command names by path is shown alone (its
    directory may hold the tasks), one found on PATH with its install directory; and the
    interpreter of its #! line, when programs are this machine's."""
    exposed = [program if named else install_root(program, hidden)]
    interpreter = shebang_interpreter(program) if host else None
    if interpreter:
        exposed += agent_exposures([interpreter], environ, hidden)
    return exposed


def resolve_command(
    command: str,
    base: Path,
    environ: dict[str, str],
    *,
    host_programs: bool,
    hidden: list[Path],
) -> ResolvedCommand:
    """Resolve the command's program and script words from base (the invocation directory).

    host_programs: bare program names and absolute paths are this machine's (tmp, bwrap), so
    they are looked up and their install exposed; under docker they are the image's and left
    alone, and only paths relative to base are this machine's. The runtime (/usr, ...) is never
    listed: bwrap shows it anyway, and under docker it is the image's.
    """
    words = split_words(command)
    replace: dict[int, str] = {}  # word start -> new text
    exposures: list[Path] = []
    missing: list[str] = []
    unresolved: list[str] = []
    python_path: list[str] = []
    for position, word in enumerate(words):
        if not word.first or not word.plain or word.text in RESERVED | BUILTINS:
            continue
        program = word.text
        found: str | None = None
        if "/" in program and (host_programs or not program.startswith("/")):
            path = (base / program).absolute()
            if not path.exists():
                if not program.startswith("/"):
                    unresolved.append(program)  # perhaps the workspace's own
                continue
            found = replace[word.start] = str(path)
        elif host_programs:
            found = shutil.which(program, path=environ.get("PATH"))
            if found is None and not _defined_in(command, program):
                missing.append(program)
        if found and PYTHON.fullmatch(Path(program).name) and (host_programs or "/" in program):
            replace[word.start], roots = python_exposures(found, environ, base)
            exposures += roots or program_exposures(
                Path(found), environ, hidden, named="/" in program, host=host_programs
            )
        elif found:
            exposures += program_exposures(
                Path(found), environ, hidden, named="/" in program, host=host_programs
            )
        if INTERPRETER.fullmatch(Path(program).name):
            script = _script_word(words, position)
            script_path = (base / script.text).absolute() if script and script.plain else None
            if script and script_path and script_path.exists():
                replace[script.start] = str(script_path)
                exposures.append(script_path)
            elif script and script_path and _relative_file(script.text):
                unresolved.append(script.text)  # perhaps the workspace's own
        inner = _shell_command(words, position) if SHELL.fullmatch(Path(program).name) else None
        if inner is not None:
            quoted, inner_command = inner
            nested = resolve_command(
                inner_command, base, environ, host_programs=host_programs, hidden=hidden
            )
            replace[quoted.start] = shlex.quote(nested.text)
            exposures += nested.exposures
            missing += nested.missing
            unresolved += nested.unresolved
            python_path += nested.python_path
        module = _module_word(words, position) if PYTHON.fullmatch(Path(program).name) else None
        if module is not None and module.plain:
            found_module = _module_path(base, module.text)
            if found_module is not None:
                exposures.append(found_module)
                python_path.append(str(base.absolute()))
    text = command
    for word in sorted(words, key=lambda w: w.start, reverse=True):
        if word.start in replace:
            text = text[: word.start] + replace[word.start] + text[word.end :]
    shown = [path for path in dict.fromkeys(exposures) if not covered(path.resolve())]
    return ResolvedCommand(
        text,
        shown,
        list(dict.fromkeys(missing)),
        list(dict.fromkeys(unresolved)),
        list(dict.fromkeys(python_path)),
    )
