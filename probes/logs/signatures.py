"""Named log signatures: the only place regexes live, loaded from rules/signatures/*.yaml.

Each signature has a ``detect`` expression (a Hyperscan-compatible regex without
named groups, used by the multi-pattern scan), an optional ``extract`` regex with
named groups (Python ``re``, run only on lines that were hit), examples that must
match with their fields, and near misses that must not.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

import diagnose
import diagnose.cache as scan_cache
from diagnose.errors import RuleError, RuleLocation, RuleSetError
from diagnose.probes.logs import regex_lint
from diagnose.probes.logs.regex_lint import leading_inline_flag, unbounded_lead
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines

# owner/repo:path/in/repo, optionally @versions (e.g. @2.1-2.13), or a documentation URL.
ORIGIN = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+:[^\s@:]+(?:@[\w.+,<>=~-]+)?|https?://\S+")


_COMPILED: dict[tuple[str, int], re.Pattern[str]] = {}


def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    """One compiled pattern per (text, flags) in the process (re's own cache holds only 512)."""
    key = (pattern, flags)
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = re.compile(pattern, flags)
    return found


_PASTED_QUOTE = "[`'\"]"  # what a message's backtick becomes once pasted: itself, a quote, or nothing


def quotes_as_pasted(pattern: str) -> str:
    """``pattern`` with each literal backtick outside a character class read as a backtick, a quote or nothing.

    Libraries quote names in their messages with backticks (transformers, accelerate, Lightning); a message pasted
    into a Markdown issue loses them (inline code is rendered) or gets quotes instead, so the pattern must not
    hinge on them. A backtick that a quantifier follows keeps it (the class takes the backtick's place)."""
    out: list[str] = []
    i, in_class, n = 0, False, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            if pattern[i + 1] == "`" and not in_class:
                out.append(_pasted(pattern, i + 2))
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            j = i + 1 + (pattern[i + 1:i + 2] == "^")
            if pattern[j:j + 1] == "]":  # a leading ']' is a member, not the class's end
                out.append(pattern[i:j + 1])
                i = j + 1
                continue
        elif ch == "`":
            out.append(_pasted(pattern, i + 1))
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _pasted(pattern: str, after: int) -> str:
    return _PASTED_QUOTE if pattern[after:after + 1] in ("?", "*", "+", "{") else _PASTED_QUOTE + "?"


class Example(BaseModel):
    """A line a signature must match, with the fields it must extract."""

    model_config = ConfigDict(extra="forbid")
    line: str
    fields: dict[str, Any] = Field(default_factory=dict)


class Signature(BaseModel):
    """One named pattern."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    component: str = Field(description="who emits it: torch, nccl, torchrun, slurm, kernel, python, ...")
    description: str
    detect: str = Field(description="Hyperscan-compatible regex, no capture names")
    extract: str | None = Field(None, description="Python regex with named groups, run on hit lines")
    caseless: bool = False
    context: bool = Field(False, description="context only (a banner, an INFO line, a progress or setting field): "
                          "no rule has to read it, and it explains no error line")
    traceback: bool = Field(False, description="also collect the traceback frames above the line")
    fields: dict[str, str] = Field(default_factory=dict, description="type of each extracted field: int|float|str")
    examples: tuple[Example, ...] = Field(min_length=1)
    counter_examples: tuple[str, ...] = Field(min_length=1)
    origin: tuple[str, ...] = Field(
        default_factory=tuple,
        description="where the text is emitted: owner/repo:path[@versions] or a documentation URL (one or a list)",
    )
    source: str | None = None
    line: int | None = None

    @field_validator("origin", mode="before")
    @classmethod
    def _origin_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (value,)
        return value

    @field_validator("origin")
    @classmethod
    def _origin_well_formed(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            if not ORIGIN.fullmatch(item):
                raise ValueError(
                    f"origin {item!r} is neither owner/repo:path[@versions] nor an http(s) URL"
                )
        return value

    @field_validator("detect", "extract")
    @classmethod
    def _tolerate_pasted_quotes(cls, value: str | None) -> str | None:
        return value if value is None else quotes_as_pasted(value)

    @model_validator(mode="after")
    def _compiles(self) -> Signature:
        # Compiled once, with the flags the matcher uses, and kept: validation is the first use.
        for label, pattern in (("detect", self.detect), ("extract", self.extract)):
            if pattern is None:
                continue
            _compiled(pattern, self.flags)
            problem = (label == "detect" and leading_inline_flag(pattern)) or unbounded_lead(pattern, self.flags)
            if problem:
                raise ValueError(f"{label} {problem}")
        return self

    @property
    def flags(self) -> int:
        """ASCII classes, as the byte-level scan engines use them."""
        return re.ASCII | (re.IGNORECASE if self.caseless else 0)

    @cached_property
    def extractor(self) -> re.Pattern[str]:
        return _compiled(self.extract or self.detect, self.flags)

    @cached_property
    def detector(self) -> re.Pattern[str]:
        return _compiled(self.detect, self.flags)

    def match(self, line: str) -> dict[str, Any] | None:
        """Fields of ``line`` when it matches, else None."""
        found = self.detector.search(line)
        if not found:
            return None
        m = found if self.extractor is self.detector else self.extractor.search(line)
        if m is None:
            return {}
        out: dict[str, Any] = {}
        for key, val in m.groupdict().items():
            if val is None:
                continue
            kind = self.fields.get(key, "str")
            try:
                out[key] = int(val) if kind == "int" else float(val) if kind == "float" else val.strip()
            except ValueError:
                out[key] = val
        return out


class SignatureSet:
    """All signatures, indexed by name, with a digest for caching compiled scanners."""

    def __init__(self, signatures: Iterable[Signature]) -> None:
        self.signatures: tuple[Signature, ...] = tuple(signatures)
        self.by_name = {s.name: s for s in self.signatures}

    @cached_property
    def digest(self) -> str:
        h = hashlib.sha256()
        for s in self.signatures:
            h.update(f"{s.name}\0{s.detect}\0{s.caseless}\n".encode())
        return h.hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.signatures)

    def matching(self, pattern: str) -> list[Signature]:
        """Signatures whose name matches a family glob such as ``nccl_ib_*``."""
        return [s for s in self.signatures if fnmatchcase(s.name, pattern)]


def builtin_signature_dir() -> Path:
    """Folder of the signature files shipped with the package."""
    return builtin_rules_dir() / "signatures"


def load_signatures(dirs: Iterable[Path] = ()) -> SignatureSet:
    """Load and validate every signature file (once per process and set of folders); all errors at once."""
    return _load_signatures(tuple(str(d) for d in dirs))


@lru_cache(maxsize=8)
def _load_signatures(dirs: tuple[str, ...]) -> SignatureSet:
    """The catalog from the cache when the files and the validating code are those that built it."""
    name = f"catalog-{_catalog_key(dirs)}.json"
    cached = scan_cache.read_json(name)
    if isinstance(cached, list):
        try:
            return SignatureSet(_construct(item) for item in cached)
        except (TypeError, KeyError, AttributeError):
            pass
    found = _validate_signatures(dirs)
    scan_cache.write_json(name, [s.model_dump(mode="json") for s in found.signatures])
    return found


def _catalog_key(dirs: tuple[str, ...]) -> str:
    """Digest of every signature file (name and bytes) and of the code that validates them."""
    parts: list[bytes | str] = [pydantic.VERSION]
    for code in (Path(__file__), Path(regex_lint.__file__)):
        parts.append(code.read_bytes())
    for directory in [builtin_signature_dir(), *dirs]:
        for path in sorted(Path(directory).glob("*.yaml")):
            parts += [str(path), path.read_bytes()]
    return scan_cache.digest(parts)


def _construct(item: dict[str, Any]) -> Signature:
    """A signature validated by an earlier run, rebuilt without validating it again."""
    examples = tuple(Example.model_construct(**e) for e in item["examples"])
    return Signature.model_construct(**{**item, "examples": examples, "origin": tuple(item["origin"]),
                                        "counter_examples": tuple(item["counter_examples"])})


def _validate_signatures(dirs: tuple[str, ...]) -> SignatureSet:
    errors: list[RuleError] = []
    sigs: list[Signature] = []
    seen: dict[str, str] = {}
    for directory in [builtin_signature_dir(), *dirs]:
        for path in sorted(Path(directory).glob("*.yaml")):
            for sig in _load_file(path, errors):
                where = f"{path}:{sig.line}"
                if sig.name in seen:
                    errors.append(RuleError(f"duplicate signature {sig.name!r} (also {seen[sig.name]})",
                                            RuleLocation(str(path), sig.line), "to rename one"))
                    continue
                seen[sig.name] = where
                sigs.append(sig)
    if errors:
        raise RuleSetError(errors)
    return SignatureSet(sigs)


def _load_file(path: Path, errors: list[RuleError]) -> list[Signature]:
    try:
        doc, lines = load_yaml_with_lines(path)
    except RuleError as exc:
        errors.append(exc)
        return []
    items = (doc or {}).get("signatures") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        errors.append(RuleError("expected a mapping with a 'signatures:' list", RuleLocation(str(path), 1)))
        return []
    out = []
    for idx, item in enumerate(items):
        line = lines.get(("signatures", idx))
        try:
            sig = Signature.model_validate({**item, "source": str(path), "line": line})
        except (ValidationError, re.error, TypeError) as exc:
            errors.append(RuleError(_first_error(exc), RuleLocation(str(path), line)))
            continue
        out.append(sig)
    return out


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        return f"{loc}: {err['msg']}"
    return str(exc)


# Module-level names under which code declares the signature names it relies on (`USES_SIGNATURES`:
# catalog names or family globs it reads) and those it gives its own evidence (`EMITS_SIGNATURES`).
USES, EMITS = "USES_SIGNATURES", "EMITS_SIGNATURES"


class Declared(BaseModel):
    """One signature name (or family glob) a module declares, where it is declared."""

    model_config = ConfigDict(frozen=True)
    name: str
    kind: str = Field(description="USES_SIGNATURES or EMITS_SIGNATURES")
    path: str
    line: int


def source_roots() -> tuple[Path, ...]:
    """Folders of the package's Python sources: diagnose/ and probes/ (one folder once installed)."""
    roots = {Path(diagnose.__file__).resolve().parent, Path(__file__).resolve().parents[1]}
    return tuple(sorted(r for r in roots if not any(o != r and o in r.parents for o in roots)))


def declarations(tree: ast.Module, path: str) -> list[Declared]:
    """The names a parsed module declares at module level, read from the source (nothing is imported)."""
    out: list[Declared] = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        if not isinstance(target, ast.Name) or target.id not in (USES, EMITS) or node.value is None:
            continue
        for const in ast.walk(node.value):
            if isinstance(const, ast.Constant) and isinstance(const.value, str):
                out.append(Declared(name=const.value, kind=target.id, path=path, line=const.lineno))
    return out


def declared_signature_names(roots: Iterable[Path] | None = None) -> list[Declared]:
    """Every declaration in the Python sources under ``roots`` (default: the package's own).

    Parsing every module costs ~0.5 s, so the result is cached by the sources' bytes."""
    paths = [path for root in (roots if roots is not None else source_roots())
             for path in sorted(Path(root).rglob("*.py"))]
    sources = [(path, path.read_bytes()) for path in paths]
    name = "declared-" + scan_cache.digest(["declared-1", *(part for p, b in sources for part in (str(p), b))]) + ".json"
    cached = scan_cache.read_json(name)
    if isinstance(cached, list):
        try:
            return [Declared(**item) for item in cached]
        except (TypeError, ValidationError):
            pass
    out: list[Declared] = []
    for path, raw in sources:
        out += declarations(ast.parse(raw.decode("utf-8"), str(path)), str(path))
    scan_cache.write_json(name, [d.model_dump() for d in out])
    return out


def check_declared(sigs: SignatureSet, declared: Iterable[Declared] | None = None) -> list[RuleError]:
    """A located error for each used name that neither the catalog (a glob: one of its names) nor an
    EMITS declaration has, and for each emitted name the catalog also defines."""
    items = list(declared if declared is not None else declared_signature_names())
    emitted = {d.name for d in items if d.kind == EMITS}
    errors = []
    for d in items:
        where = RuleLocation(d.path, d.line)
        if d.kind == EMITS and d.name in sigs.by_name:
            errors.append(RuleError(f"emitted signature {d.name!r} is also a catalog name ({sigs.by_name[d.name].source})",
                                    where, "to give the code's own evidence a name of its own"))
        elif d.kind == USES and d.name not in sigs.by_name and d.name not in emitted and not (
                any(ch in d.name for ch in "*?[") and sigs.matching(d.name)):
            errors.append(RuleError(f"declared signature {d.name!r} is not in the catalog", where,
                                    "a name from rules/signatures/, a family glob that matches one, or an "
                                    "EMITS_SIGNATURES name"))
    return errors
