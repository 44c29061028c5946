"""What a generated task is: a cheap Spec (id and metadata) that builds its trees on demand."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pytest_agentbench.suites.mechanical.prompt import compose
from pytest_agentbench.suites.mechanical.rng import HashRandom
from pytest_agentbench.suites.mechanical.unicode import NBSP, ZWSP, Twin
from pytest_agentbench.tasks.hashing import fixture_hash

SUITE_NAME = "mechanical"
SUITE_VERSION = "1"

_TAG = re.compile(r"[a-z][a-z0-9_]*")
_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_SCALE = re.compile(r"(s|f)([0-9]+)")


@dataclass(frozen=True)
class Built:
    """A built task: the prompt and the trees (relative POSIX path -> bytes).

    `keep` names the bystander file present in both trees that the edit must not touch.
    """

    prompt: str
    input_files: Mapping[str, bytes]
    expected_files: Mapping[str, bytes]
    keep: str

    def fixture_hash(self) -> str:
        return fixture_hash(self.prompt, self.input_files, self.expected_files, None)


@dataclass(frozen=True)
class Edit:
    """What a family produces: its instruction and the files before and after."""

    instruction: str
    before: Mapping[str, str | bytes]
    after: Mapping[str, str | bytes]


@dataclass(frozen=True)
class Context:
    """Everything a family needs to build one task deterministically."""

    spec: Spec
    rng: HashRandom
    twin: Twin

    @property
    def size(self) -> int:
        """The number in the scale: lines in the main file (sN) or files (fN)."""
        return scale_size(self.spec.scale)

    @property
    def case(self) -> str:
        if self.spec.case is None:
            raise ValueError(f"{self.spec.id}: this family expects a case")
        return self.spec.case


def scale_size(scale: str) -> int:
    match = _SCALE.fullmatch(scale)
    if match is None:
        raise ValueError(f"scale {scale!r} must look like s<lines> or f<files>")
    return int(match.group(2))


def scale_tag(scale: str) -> str:
    """s1000 -> scale_1000 (lines in one file); f100 -> files_100 (number of files)."""
    kind = "scale" if scale.startswith("s") else "files"
    return f"{kind}_{scale_size(scale)}"


@dataclass(frozen=True)
class Spec:
    """One task of the suite. Cheap to make; build() produces its prompt and trees."""

    id: str
    family: str
    scale: str
    variant: str
    language: str
    case: str | None
    make: Callable[[Context], Edit] = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        if _ID.fullmatch(self.id) is None:
            raise ValueError(f"task id {self.id!r} must be lowercase words joined by '-'")
        for tag in self.tags:
            if _TAG.fullmatch(tag) is None:
                raise ValueError(f"{self.id}: tag {tag!r} is not usable as a pytest marker")

    @property
    def category(self) -> str:
        return self.family

    @property
    def tags(self) -> tuple[str, str, str, str]:
        """(family, scale, language, variant) as marker names: only [a-z0-9_]."""
        return (
            self.family.replace("-", "_"),
            scale_tag(self.scale),
            "lang_" + self.language.replace("-", "_"),
            self.variant,
        )

    @property
    def seed(self) -> str:
        return f"{SUITE_NAME}/{SUITE_VERSION}/{self.id}"

    def build(self) -> Built:
        """Prompt, input and expected trees; pure and deterministic."""
        rng = HashRandom(self.seed)
        edit = self.make(Context(self, rng, Twin(self.variant)))
        before = {path: _encode(data) for path, data in edit.before.items()}
        after = {path: _encode(data) for path, data in edit.after.items()}
        keep, keep_bytes = _bystander(rng, self.variant, before.keys() | after.keys())
        before[keep] = after[keep] = keep_bytes
        if before == after:
            raise AssertionError(f"{self.id}: the expected tree equals the input tree")
        return Built(
            prompt=compose(edit.instruction),
            input_files=dict(sorted(before.items())),
            expected_files=dict(sorted(after.items())),
            keep=keep,
        )


def _encode(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


_BYSTANDER_NAMES = ("README.md", "NOTES.txt", "CHANGELOG.md", "AUTHORS", "docs/overview.md")


def _bystander(rng: HashRandom, variant: str, taken: set[str]) -> tuple[str, bytes]:
    """A file no instruction mentions; its quirks (trailing blanks, a tab, no final
    newline) catch tools that rewrite files they were not asked to touch."""
    free = [name for name in _BYSTANDER_NAMES if name not in taken]
    name = rng.choice(free)
    space = NBSP if variant == "unicode" else " "
    mark = ZWSP if variant == "unicode" else ""
    text = (
        f"# Project notes {rng.randint(100, 999)}\n"
        f"Keep this file as it is.  \n"
        f"\tindented{space}with a tab\n"
        f"last line without a final newline{mark}"
    )
    return name, text.encode("utf-8")


@dataclass(frozen=True)
class Family:
    """A kind of edit, generated at each scale x case x variant.

    `language` is the language of every task of the family, or None when the
    case names the language (the language fixtures).
    """

    name: str
    summary: str
    scales: tuple[str, ...]
    make: Callable[[Context], Edit]
    cases: tuple[str, ...] = ()
    language: str | None = "text"

    def specs(self, variants: tuple[str, ...]) -> list[Spec]:
        out = []
        for scale in self.scales:
            for case in self.cases or (None,):
                for variant in variants:
                    parts = [self.name, scale, *([case] if case else []), variant]
                    language = self.language or case
                    if language is None:
                        raise ValueError(f"family {self.name}: language comes from a case")
                    out.append(
                        Spec("-".join(parts), self.name, scale, variant, language, case, self.make)
                    )
        return out
