"""Redaction for public sharing: identifiers become stable placeholders.

A `Redactor` holds the mapping for one output, so `node23` is `node-1` in every
line, table and file of that output. Redaction runs in two passes: `learn` finds
identifiers named by their context (`host : x`, `/home/<user>/`, `JOB 12 ON x`,
squeue columns), and `redact` replaces those everywhere plus everything that is
an identifier by its shape (IPs, ports, pids, paths, domain names).
Redaction only rewrites text: cause ids, scores, ranks and confidences are kept.
"""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Iterable
from typing import Any

from diagnose.output import redact_patterns as P
from diagnose.output.report import Report

_PROTECTED_KEYS = frozenset({
    "schema", "id", "refines", "score", "confidence", "symptom", "ranks", "rules", "kind",
    "signature", "probe", "experimental", "world_size", "seen", "missing", "rank", "line",
})
_NUMERIC_KINDS = ("job", "pid", "port")


class Redactor:
    """Identifier -> placeholder mapping, stable across one output."""

    def __init__(self) -> None:
        self._maps: dict[str, dict[str, str]] = {kind: {} for kind in P.KINDS}
        self._literals: dict[str, str] = {}
        self._seen: set[tuple[str, str]] = set()
        self._regex: re.Pattern[str] | None = None
        self._inner: re.Pattern[str] | None = None
        self._gate: P.Gate | None = None
        self._branches: dict[str, str] = {}
        self._by_names: dict[frozenset[str], re.Pattern[str]] = {}

    # -- placeholders -------------------------------------------------------------
    def placeholder(self, kind: str, value: str) -> str:
        """The placeholder for `value` of `kind`, allocating the next one if new."""
        key = self._key(kind, value)
        table = self._maps[kind]
        if key not in table:
            n = len(table) + 1
            if kind == "host":
                table[key] = f"node-{n}"
            elif kind in ("ip", "port", "pid", "mac"):
                table[key] = f"<{kind}-{n}>"
            elif kind == "secret":
                table[key] = "<secret>"
            else:
                table[key] = f"<{kind}>" if n == 1 else f"<{kind}-{n}>"
        return table[key]

    @staticmethod
    def _key(kind: str, value: str) -> str:
        if kind == "host":
            return value.split(".")[0].lower()
        return value

    def _ip(self, text: str) -> str | None:
        try:
            addr = ipaddress.ip_address(text)
        except ValueError:
            return None
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
            addr = addr.ipv4_mapped
        if addr.is_loopback:
            return "<ip-loopback>"
        if addr.is_unspecified:
            return "<ip-any>"
        return self.placeholder("ip", str(addr))

    # -- learning -----------------------------------------------------------------
    def learn(self, kind: str, value: str) -> None:
        """Register an identifier so it is replaced wherever it occurs."""
        value = value.strip().strip("'\",;")
        if (kind, value) in self._seen:
            return
        self._seen.add((kind, value))
        if not value or value in P.GENERIC or value.lower() in P.GENERIC:
            return
        if kind == "nodelist":
            self._learn_nodelist(value)
            return
        if kind in _NUMERIC_KINDS:
            if not value.isdigit():
                if kind == "job" and len(value) >= 4:  # a run id
                    self._add_literal(value, self.placeholder("job", value))
                return
            if len(value) < 5:  # short numbers are replaced in their context only
                return
        if kind == "host":
            if self._ip(value) is not None or value.isdigit() or len(value) < 2:
                return
            if "." in value:
                self._add_literal(value.split(".")[0], self.placeholder("host", value))
        elif kind in ("user", "partition", "account") and len(value) < 2:
            return
        self._add_literal(value, self.placeholder(kind, value))

    def _add_literal(self, text: str, replacement: str) -> None:
        if text not in self._literals:
            self._literals[text] = replacement
            self._regex = self._inner = None

    def _learn_nodelist(self, value: str) -> None:
        for part in P.NODELIST_ITEM.findall(value):
            hosts = P.expand_nodelist(part)
            for host in hosts:
                self.learn("host", host)
            if len(hosts) > 1 or "[" in part:
                names = [self.placeholder("host", h) for h in hosts]
                self._add_literal(part, P.compress_nodes(names))

    def learn_path(self, path: str) -> None:
        """Learn from a path the user named: its user folder and the identifiers in its parts."""
        self.learn_text(path)
        for part in path.replace("\\", "/").split("/"):
            self.learn_text(part.replace("_", " ").replace("-", " "))

    def learn_text(self, text: str) -> None:
        """Learn the identifiers that `text` names by their context."""
        for gate, pattern in P.LEARN:
            lines = "\n".join(text[a:b] for a, b in P.line_spans(text, gate))
            for m in pattern.finditer(lines):
                for kind, value in m.groupdict().items():
                    if value is not None and value not in P.HEADER_WORDS:
                        self.learn("pid" if kind == "tid" else kind, value)
        self._learn_tables(text)

    def _learn_tables(self, text: str) -> None:
        for start, end in P.line_spans(text, P.TABLE_GATE):
            cols = text[start:end].split()
            kinds = [P.TABLE_COLUMNS.get(c.upper()) for c in cols]
            if "partition" not in kinds:
                continue
            for row in text[end + 1:end + 100_000].split("\n", 500)[:500]:
                cells = row.split()
                if len(cells) != len(cols) or cells == cols:
                    if cells:
                        break
                    continue
                for kind, cell in zip(kinds, cells, strict=True):
                    if kind:
                        self.learn(kind, cell)

    def learn_evidence(self, items: Iterable[Any]) -> None:
        """Learn from evidence records: hosts, pids, environment variables and texts."""
        for item in items:
            data = item.model_dump() if hasattr(item, "model_dump") else dict(item)
            prov = data.get("provenance") or {}
            if prov.get("host"):
                self.learn("host", str(prov["host"]))
            if prov.get("pid"):
                self.learn("pid", str(prov["pid"]))
            env = data.get("variables") or {}
            self.learn_text("\n".join(f"{k}={v}" for k, v in env.items()))
            for key in ("text", "message", "detail"):
                if isinstance(data.get(key), str):
                    self.learn_text(data[key])
            if prov.get("source"):
                self.learn_text(str(prov["source"]))

    # -- replacing ----------------------------------------------------------------
    def _compiled(self) -> re.Pattern[str]:
        if self._regex is None:
            lits = sorted(self._literals, key=len, reverse=True)
            lit = (r"(?<![A-Za-z0-9])(?P<lt>" + "|".join(map(re.escape, lits)) + r")(?![A-Za-z0-9])"
                   + P.LIT_SUFFIX) if lits else r"(?!x)x"
            branches = {name: f"(?P<{name}_>{lit if pat is None else pat})" for name, pat in P.STRUCTURE}
            self._regex = re.compile("|".join(branches.values()))
            self._branches, self._by_names = branches, {}
            self._inner = re.compile("|".join(branches[n] for n in ("v4", "job", "uuid", "lit", "k8s_pod", "short_host")))
            self._gate = tuple(lits) if lits else None
        return self._regex

    def redact(self, text: str) -> str:
        """Replace every identifier in `text` (call `learn_text` first for context-named ones)."""
        self._compiled()
        gates = P.REDACT_GATES + ([(self._gate, ("lit",))] if self._gate is not None else [])
        lines = P.gated_lines(text, gates)
        out, pos = [], 0
        for start in sorted(lines):
            end, names = lines[start]
            regex = self._branch_regex(frozenset(names))
            out += [text[pos:start], regex.sub(self._replace, text[start:end])]
            pos = end
        return self._glued_v6("".join(out) + text[pos:])

    def _glued_v6(self, text: str) -> str:
        """IPv6 addresses glued to other text (``eth0:fe80::1%eth0<0>``, ``remoteGids::ffff:10.1.2.3``)."""
        if "::" not in text and text.count(":") < 4:
            return text
        allowed = set(string.hexdigits + ":.")
        out, i, n = [], 0, len(text)
        while i < n:
            if text[i] not in allowed:
                out.append(text[i])
                i += 1
                continue
            j = i
            while j < n and text[j] in allowed:
                j += 1
            out.append(self._v6_run(text, i, j))
            i = j
        return "".join(out)

    def _v6_run(self, text: str, i: int, j: int) -> str:
        run = text[i:j]
        if run.count(":") < 2:
            return run
        starts = [0]
        if i > 0 and text[i - 1].isalnum() and not run.startswith("::"):
            starts = [run.find(":") + 1, 0]  # `eth0:fe80::..`: the address starts after the glued word
        for start in starts:
            whole = run[start:]
            for cand in dict.fromkeys((whole, whole.rstrip("."), whole.rstrip(".:"))):
                groups = [g for g in cand.replace(".", ":").split(":") if g]
                if len(groups) < 3:
                    continue
                ip = self._ip(cand)
                if ip is not None:
                    return run[:start] + ip + whole[len(cand):]
        return run

    def _branch_regex(self, names: frozenset[str]) -> re.Pattern[str]:
        """The alternation of just these branches, in STRUCTURE order (cached)."""
        if names not in self._by_names:
            self._by_names[names] = re.compile("|".join(b for n, b in self._branches.items() if n in names))
        return self._by_names[names]

    def _replace(self, m: re.Match[str]) -> str:
        name = m.lastgroup[:-1] if m.lastgroup else ""
        return getattr(self, f"_r_{name}")(m)

    def _r_email(self, m: re.Match[str]) -> str:
        return "<email>"

    def _r_path(self, m: re.Match[str]) -> str:
        path = m.group(0)
        parts = path.split("/")
        for env_dir in P.ENV_DIRS:
            if env_dir in parts[2:]:
                return "/path/to/env/" + self._lits("/".join(parts[parts.index(env_dir):]))
        if parts[1] == "tmp" and len(parts) > 3:  # launcher temp folders carry run ids
            return "/tmp/<tmp>/" + self._lits(parts[-1])
        if parts[1] in P.PUBLIC_ROOTS:
            return self._lits(path)
        return "/path/to/project/" + self._lits(parts[-1]) if len(parts) > 2 else "/path/to/project"

    def _lits(self, text: str) -> str:
        """Only the learned identifiers (used inside paths that are otherwise kept)."""
        self._compiled()
        assert self._inner is not None
        return self._inner.sub(self._replace, text)

    def _r_v6b(self, m: re.Match[str]) -> str:
        ip = self._ip(m.group("v6b"))
        if ip is None:
            return m.group(0)
        port = m.group("v6bp")
        return f"[{ip}]" + (f":{self.placeholder('port', port)}" if port else "")

    def _r_v4(self, m: re.Match[str]) -> str:
        ip = self._ip(m.group("v4"))
        if ip is None:
            return m.group(0)
        if m.group("v4p"):
            return f"{ip}:{self.placeholder('port', m.group('v4p'))}"
        if m.group("v4a"):
            return ip + self.placeholder("port", m.group("v4a"))
        return ip

    def _r_v6(self, m: re.Match[str]) -> str:
        text = m.group(0)
        port = m.group("v6p")
        if port:
            text = text[: -len(port) - 2]
        if not any(c in string.hexdigits for c in text):
            return m.group(0)
        ip = self._ip(text)
        if ip is None:
            return m.group(0)
        return ip + (self.placeholder("port", port) if port else "")

    def _r_nccl(self, m: re.Match[str]) -> str:
        return f":{self.placeholder('pid', m.group('np'))}:{self.placeholder('pid', m.group('nt'))}"

    def _r_kv(self, m: re.Match[str]) -> str:
        key = m.group("kvk")
        kind = P.STRUCTURE_KIND["kv"][key.strip("-= \t").lower()]
        return key + self.placeholder(kind, m.group("kvv"))

    def _r_sflag(self, m: re.Match[str]) -> str:
        kind = P.STRUCTURE_KIND["sflag"][m.group("sfk")]
        return self.redact(m.group("sfp")) + self.placeholder(kind, m.group("sfv"))

    def _r_port(self, m: re.Match[str]) -> str:
        return m.group("ptk") + self.placeholder("port", m.group("ptv"))

    def _r_pid(self, m: re.Match[str]) -> str:
        return m.group("pik") + self.placeholder("pid", m.group("piv"))

    def _r_job(self, m: re.Match[str]) -> str:
        return m.group("jbk") + self.placeholder("job", m.group("jbv"))

    def _r_url_secret(self, m: re.Match[str]) -> str:
        return f"{m.group('us')}{self.placeholder('user', m.group('uu'))}:<secret>@"

    def _r_env_secret(self, m: re.Match[str]) -> str:
        return m.group("sk") + "<secret>"

    def _r_token_shape(self, m: re.Match[str]) -> str:
        return "<secret>"

    def _r_mac(self, m: re.Match[str]) -> str:
        return self.placeholder("mac", m.group("mac").lower().replace("-", ":"))

    def _r_rank_pid(self, m: re.Match[str]) -> str:
        pairs = [p.strip().split(":") for p in m.group("rpv").split(",")]
        return m.group("rpk") + ", ".join(f"{r}:{self.placeholder('pid', pid)}" for r, pid in pairs)

    def _r_fqdn_file(self, m: re.Match[str]) -> str:
        return self.placeholder("host", m.group("ff"))

    def _r_host_port(self, m: re.Match[str]) -> str:
        host = m.group("hph")
        if host.rsplit(".", 1)[-1].lower() in P.FILE_EXTS and "." in host:
            return m.group(0)
        return f"{m.group('hps') or ''}{self.placeholder('host', host)}:{self.placeholder('port', m.group('hpp'))}"

    def _r_rel_path(self, m: re.Match[str]) -> str:
        last = m.group("rp").rsplit("/", 1)[-1]
        return "path/to/project/" + self._lits(last)

    def _r_k8s_pod(self, m: re.Match[str]) -> str:
        return self.placeholder("host", m.group("pod"))

    def _r_short_host(self, m: re.Match[str]) -> str:
        return self.placeholder("host", m.group("sh"))

    def _r_uuid(self, m: re.Match[str]) -> str:
        return "GPU-<uuid>"

    def _r_lit(self, m: re.Match[str]) -> str:
        out = self._literals[m.group("lt")]
        sfx, port, angled = m.group("lsfx") or "", m.group("lport"), m.group("laport")
        is_host = out.startswith("node-")
        is_address = is_host or out.startswith("<ip-")
        if sfx and not (is_host and sfx.rsplit(".", 1)[-1].lower() not in P.FILE_EXTS):
            out += sfx
        out += m.group("lbr") or ""
        if port:
            out += ":" + (self.placeholder("port", port) if is_address else port)
        elif angled:  # NCCL's address<port>
            out += self.placeholder("port", angled) if is_address else f"<{angled}>"
        return out

    def _r_fqdn(self, m: re.Match[str]) -> str:
        name = m.group("fq")
        labels = name.split(".")
        if name.lower().endswith(P.PUBLIC_DOMAINS):
            return name
        if labels[-1] in P.TLD_AMBIGUOUS and (len(labels) < 3 or labels[0] in P.CODE_WORDS):
            return name
        return self.placeholder("host", name)


def redact_text(text: str, redactor: Redactor | None = None) -> str:
    """Redact one text (a log, a Markdown record): learn from it, then replace."""
    redactor = redactor or Redactor()
    redactor.learn_text(text)
    return redactor.redact(text)


redact_markdown = redact_text


def _strings(data: Any) -> Iterable[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            if key not in _PROTECTED_KEYS:
                yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


def _walk(data: Any, redactor: Redactor, key: str | None = None) -> Any:
    if isinstance(data, dict):
        return {(k if k in _PROTECTED_KEYS else redactor.redact(k)): (v if k in _PROTECTED_KEYS else _walk(v, redactor, k))
                for k, v in data.items()}
    if isinstance(data, list):
        return [_walk(v, redactor, key) for v in data]
    if isinstance(data, str):
        return redactor.redact(data)
    if key == "pid" and isinstance(data, int) and not isinstance(data, bool):
        return redactor.placeholder("pid", str(data))
    return data


def _learn_report(data: Any, redactor: Redactor) -> None:
    """Hosts and pids named by their JSON key, then everything named by context."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "host" and isinstance(value, str):
                    redactor.learn("host", value)
                elif key == "nodes" and isinstance(value, list):
                    for node in value:
                        redactor.learn("host", str(node))
                elif key == "pid" and isinstance(value, int):
                    redactor.learn("pid", str(value))
                elif key == "variables" and isinstance(value, dict):
                    redactor.learn_text("\n".join(f"{k}={v}" for k, v in value.items()))
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    redactor.learn_text("\n".join(_strings(data)))


def redact_report(data: dict[str, Any], redactor: Redactor | None = None) -> dict[str, Any]:
    """A redacted copy of a JSON report; ids, scores, ranks and confidences are untouched."""
    redactor = redactor or Redactor()
    _learn_report(data, redactor)
    return _walk(data, redactor)


def redact_report_model(report: Any, redactor: Redactor | None = None) -> Any:
    """The same for a `Report` model: returns a redacted `Report`."""
    return Report.model_validate(redact_report(report.to_json_dict(), redactor))
