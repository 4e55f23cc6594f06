"""What identifiers look like: the regexes and word lists behind `diagnose.output.redact`.

Mechanism, not diagnosis knowledge: how a host, an IP, a port, a user, a Slurm
partition, a job id or a pid shows up in launcher, NCCL, Slurm and Python output.
"""

from __future__ import annotations

import re
from typing import Union

# Kinds of identifier, each with its own placeholder family.
KINDS = ("host", "ip", "port", "pid", "user", "job", "partition", "account")

# Roots of absolute paths that are shared system locations, kept as they are
# (learned identifiers inside them are still replaced).
PUBLIC_ROOTS = frozenset({
    "usr", "lib", "lib32", "lib64", "bin", "sbin", "etc", "proc", "sys", "dev", "tmp",
    "var", "opt", "run", "path", "nix", "snap", "System", "Library", "Applications",
})
ENV_DIRS = ("site-packages", "dist-packages")

# File extensions: `node23.log` is a file named after a host, not a domain.
FILE_EXTS = frozenset({
    "log", "txt", "out", "err", "json", "yaml", "yml", "py", "pyc", "sh", "pt", "pth", "ckpt",
    "bin", "safetensors", "csv", "md", "html", "gz", "zst", "tar", "npz", "npy", "pkl", "cc",
    "cpp", "h", "so", "trace", "dump", "core", "stderr", "stdout", "lock", "toml", "cfg", "ini",
})

# Domain suffixes that make `a.b.<tld>` a host name. Ambiguous ones (also common
# attribute names in Python: `.net`, `.local`, `.io`, `.int`) need three labels.
_TLDS_STRICT = (
    "com|org|edu|gov|mil|de|uk|fr|ch|nl|se|no|fi|dk|jp|cn|kr|tw|au|ca|us|eu|it|es|pl|cz|at|be"
    "|ru|br|il|sg|hk|nz|ie|pt|gr|hu|ro|internal|lan|corp|intra|localdomain|priv|cloud|hpc"
)
_TLDS_AMBIGUOUS = "net|io|ai|local|cluster|home|int|site|dev|tech|science|ac"
PUBLIC_DOMAINS = (
    "pytorch.org", "github.com", "githubusercontent.com", "nvidia.com", "python.org",
    "huggingface.co", "pypi.org", "readthedocs.io", "stackoverflow.com", "slurm.schedmd.com",
)
# Values never learned as identifiers (too generic to identify anyone, and
# replacing them everywhere would wreck the text).
GENERIC = frozenset({
    "localhost", "none", "None", "null", "default", "root", "user", "users", "admin", "ubuntu",
    "runner", "nobody", "home", "gpu", "gpus", "cpu", "batch", "debug", "main", "normal", "long",
    "short", "compute", "standard", "shared", "test", "interactive", "express", "small",
    "large", "medium", "devel", "dev", "general", "all", "work", "local", "node", "host",
    "N/A", "unknown", "true", "false", "auto", "static", "c10d", "etcd", "tcp", "env",
})

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTVAL = r"[A-Za-z0-9][\w.-]*[A-Za-z0-9]|[A-Za-z]"
_NODELIST = r"[A-Za-z][\w-]*(?:\[[\d,\-]+\][\w-]*)?(?:,[A-Za-z][\w-]*(?:\[[\d,\-]+\][\w-]*)?)*"

Gate = Union[tuple[str, ...], re.Pattern[str]]  # noqa: UP007 (a runtime alias, py3.10)


def _gate(spec: tuple[str, ...] | str) -> Gate:
    """Literal gates are searched with `str.find`, the rest compiled."""
    return spec if isinstance(spec, tuple) else re.compile(spec)


# Phase 1: where an identifier is named by its context. Each entry is (gate, pattern):
# the gate is a cheap literal-led regex (Python's `re` is fast only on literal
# prefixes), the pattern runs only on the lines the gate selects; its named
# groups say what it found (host, user, job, pid, port, partition, account, nodelist).
_LEARN = (
    (("host", "Host", "HOST"), rf"(?i:\bhost(?:name)?)\s*[:=]\s*(?P<host>{_HOSTVAL})"),
    (("MASTER_ADDR", "NODENAME", "HOST", "BatchHost", "NodeName", "AllocNode", "master_addr",
      "master-addr", "rdzv"),
     rf"(?:\bMASTER_ADDR|\bSLURMD_NODENAME|\bHOSTNAME|\bSLURM_SUBMIT_HOST|\bBatchHost|\bNodeName"
     rf"|\bAllocNode|--master[_-]addr(?:ess)?|--rdzv[_-]endpoint|\brdzv_endpoint)"
     rf"\s*[=: ]\s*['\"]?(?P<host>{_HOSTVAL})"),
    (r":\d+:\d+ \[", rf"(?<![\w.:-])(?P<host>{_HOSTVAL}):(?P<pid>\d+):(?P<tid>\d+) \[\d+\]"),
    (r"\]:\d", r"\[(?P<host>[A-Za-z][\w.-]*)\]:(?P<port>\d{1,5})\b"),
    (("JOB ", "STEP "), rf"\b(?:JOB|STEP) (?P<job>\d+)(?:\.\d+)? ON (?P<host>{_HOSTVAL})"),
    (("srun: error:",), rf"\bsrun: error: (?P<host>{_HOSTVAL}): task"),
    (("@",), r"(?<![\w.@+-])(?P<user>[a-z_][\w.-]{0,31})@(?P<host>[A-Za-z][\w-]*)(?![\w.@-])"),
    (r"ip-\d", r"\b(?P<host>ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})\b"),
    (("NODELIST", "NodeList", "nodelist"),
     rf"(?:\bNODELIST|\bNodeList|\bSLURM_(?:JOB_|STEP_)?NODELIST|\bReqNodeList|--nodelist)"
     rf"\s*[=:]\s*(?P<nodelist>{_NODELIST})"),
    (("/home/", "/Users/", "/u/", "/homes/", "\\Users\\"),
     r"(?:/home|/Users|/u|/homes|\\Users)[/\\](?P<user>[A-Za-z_][\w.-]*)"),
    (("~",), r"(?<![\w/~])~(?P<user>[A-Za-z_][\w.-]*)"),
    (("USER", "LOGNAME", "User"), r"\b(?:USER|LOGNAME|SLURM_JOB_USER|User|UserId)\s*[=:]\s*(?P<user>[A-Za-z_][\w.-]*)"),
    (("JOB_ID", "JOBID", "JobI"), r"\b(?:SLURM_(?:ARRAY_)?JOB_?ID|JobId|JobID)\s*[=:]\s*(?P<job>\d+)"),
    (("Submitted batch job ", "slurm-"), r"(?:Submitted batch job |\bslurm-)(?P<job>\d+)"),
    (("RUN_ID", "rdzv", "run_id"),
     r"(?:\bTORCHELASTIC_RUN_ID|--rdzv[_-]id|\brdzv_id|\brun_id)\s*[=: ]\s*['\"]?(?P<job>[\w.-]+)"),
    (("partition", "PARTITION", "Partition"),
     r"(?:--partition|\bSLURM_JOB_PARTITION|\bPARTITION|\bPartition)\s*[= ]\s*(?P<partition>[\w.-]+)"),
    (("account", "ACCOUNT", "Account"),
     r"(?:--account|\bSLURM_JOB_ACCOUNT|\bACCOUNT|\bAccount)\s*[= ]\s*(?P<account>[\w.-]+)"),
    (("SBATCH", "sbatch", "srun", "salloc"), r"(?:#SBATCH|\bsbatch|\bsrun|\bsalloc)\b[^\n]*?\s-p\s*(?P<partition>[\w.-]+)"),
    (("SBATCH", "sbatch", "srun", "salloc"), r"(?:#SBATCH|\bsbatch|\bsrun|\bsalloc)\b[^\n]*?\s-A\s*(?P<account>[\w.-]+)"),
    (("pid", "PID", "Pid"), r"\b(?:pid|PID|Pid)\b\s*[:=#]?\s*(?P<pid>\d+)"),
    (("PORT", "port", "Port"),
     r"(?:\bMASTER_PORT|--master[_-]port|\bport|\bPort|\bPORT)\s*[=:]?\s*(?P<port>\d{2,5})(?!\d)"),
)
LEARN = [(_gate(gate), re.compile(pattern)) for gate, pattern in _LEARN]
# `--partition gpu` vs the squeue header `PARTITION  NAME`: headers are not values.
HEADER_WORDS = frozenset({"NAME", "USER", "ST", "TIME", "NODES", "JOBID", "STATE", "AVAIL", "ACCOUNT",
                          "PARTITION", "JobID", "JobName", "Partition", "Account"})

# squeue / sacct / sinfo tables: a header line naming these columns.
TABLE_GATE = ("PARTITION", "Partition")
TABLE_COLUMNS = {
    "JOBID": "job", "PARTITION": "partition", "USER": "user", "ACCOUNT": "account",
    "NODELIST": "nodelist", "NODELIST(REASON)": "nodelist", "USERID": "user",
}

# Phase 2: structural patterns, one alternation; the first branch that matches wins.
_IP4 = r"(?:\d{1,3}\.){3}\d{1,3}"
STRUCTURE = [
    ("email", r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    ("path", r"(?<![\w.~\\/-])/[^\s/'\"(),:;<>\[\]{}|`]+(?:/[^\s/'\"(),:;<>\[\]{}|`]*)*"),
    ("v6b", r"\[(?P<v6b>[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)\](?::(?P<v6bp>\d{1,5})(?!\d))?"),
    ("v4", rf"(?<![\w.])(?P<v4>{_IP4})(?![\d]|\.\d)(?::(?P<v4p>\d{{1,5}})(?![\d:])|<(?P<v4a>\d{{1,5}})>)?"),
    ("v6", rf"(?<![\w:.])(?:[0-9A-Fa-f]{{0,4}}:){{2,7}}(?:[0-9A-Fa-f]{{1,4}}|{_IP4})?(?![\w:]|\.\d)"),
    ("nccl", r"(?<=[\w\]>]):(?P<np>\d+):(?P<nt>\d+)(?= \[\d+\])"),
    ("kv", r"(?P<kvk>(?:--partition|--account)[= ]\s*|\b(?:SLURM_JOB_PARTITION|SLURM_JOB_ACCOUNT|PARTITION"
           r"|ACCOUNT|Partition|Account|USER|LOGNAME|SLURM_JOB_USER|User|UserId)=)(?P<kvv>[\w.-]+)"),
    ("sflag", r"(?P<sfp>(?:#SBATCH|\bsbatch|\bsrun|\bsalloc)\b[^\n]*?\s-(?P<sfk>[pA])\s*)(?P<sfv>[\w.-]+)"),
    ("port", r"(?P<ptk>\bMASTER_PORT\s*[=:]\s*|--master[_-]port[= ]\s*|\b[Pp]ort\s*[=:]?\s*|\bPORT\s*[=:]\s*"
             r"|\blocalhost:)(?P<ptv>\d{2,5})(?!\d)"),
    ("pid", r"(?P<pik>\b(?:pid|PID|Pid)\b(?:\s*[:=#]\s*|\s+)|\bpid_|\b[Pp]rocess(?:es)?\s+(?=\d{3}))(?P<piv>\d+)"),
    ("job", r"(?P<jbk>\bSLURM_(?:ARRAY_)?JOB_?ID\s*[=:]\s*|\bJobI[dD]=|\b(?:JOB|STEP)\s+|Submitted batch job\s+"
            r"|\bslurm-|\b[Jj]ob(?:\s?[Ii][Dd])?\s*[:=#]?\s*(?=\d{3}))(?P<jbv>\d+)"),
    ("uuid", r"\bGPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    ("lit", None),
    ("fqdn", rf"(?<![\w.@/-])(?P<fq>(?:{_LABEL}\.)+(?:{_TLDS_STRICT}|{_TLDS_AMBIGUOUS}))(?![\w-]|\.\w|\()"),
]
TLD_AMBIGUOUS = frozenset(_TLDS_AMBIGUOUS.split("|"))
# `self.model.net` is an attribute chain, not a host.
CODE_WORDS = frozenset({"self", "cls", "torch", "np", "nn", "model", "module", "os", "sys", "args", "cfg",
                        "config", "super", "F", "tf", "jax", "this", "ctx", "opt", "optimizer"})
STRUCTURE_KIND = {
    "kv": {"partition": "partition", "account": "account", "user": "user", "logname": "user",
           "slurm_job_user": "user", "userid": "user", "slurm_job_partition": "partition",
           "slurm_job_account": "account"},
    "sflag": {"p": "partition", "A": "account"},
}

# Cheap literal-led gates: a line can only hold a match if one of these matches it,
# so the full patterns run on few lines (Python's `re` is fast only on literal prefixes).
LEARN_GATES = [re.compile(p) for p in (
    r"host|Host|HOST|MASTER_ADDR|NODENAME|NodeName|AllocNode|master[_-]addr|rdzv|run_id|RUN_ID",
    r":\d+:\d+ \[", r"\]:\d", r"JOB |STEP |srun: error:|Submitted batch job|slurm-", r"@", r"ip-\d",
    r"NODELIST|NodeList|nodelist|/home/|/Users/|/u/|/homes/|\\Users\\|~|USER|LOGNAME|User",
    r"SLURM_|JobI|partition|PARTITION|Partition|account|ACCOUNT|Account|SBATCH|sbatch|srun|salloc",
    r"pid|PID|Pid|PORT|port|Port",
)]
_TLD_GATE = rf"\.(?:{_TLDS_STRICT}|{_TLDS_AMBIGUOUS})(?![\w-])"
# Phase 2 gates: which branches of STRUCTURE can match on a line that a gate selects.
REDACT_GATES = [(_gate(gate), branches) for gate, branches in (
    (("@",), ("email",)),
    (r"/(?<![\w.~\\/-]/)[^\s/'\"(),:;<>\[\]{}|`]", ("path",)),
    (r"\[[0-9A-Fa-f:.]*:", ("v6b",)),
    (r"\.\d{1,3}\.\d{1,3}\.\d", ("v4",)),
    (("::",), ("v6",)),
    (r":[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:", ("v6",)),
    (r":\d+:\d+ \[", ("nccl",)),
    (("--partition", "--account", "SLURM_JOB_", "PARTITION=", "ACCOUNT=", "Partition=", "Account=", "USER=",
      "LOGNAME=", "User"), ("kv",)),
    (("SBATCH", "sbatch", "srun", "salloc"), ("sflag",)),
    (("port", "Port", "PORT", "localhost:"), ("port",)),
    (("pid", "PID", "Pid", "rocess ", "rocesses "), ("pid",)),
    (("JOB", "STEP", "slurm-", "job", "Job"), ("job",)),
    (("GPU-",), ("uuid",)),
    (_TLD_GATE, ("fqdn",)),
)]


def line_spans(text: str, gate: Gate) -> list[tuple[int, int]]:
    """(start, end) spans of the lines of `text` that `gate` matches, in order."""
    if not isinstance(gate, tuple):
        return _regex_spans(text, gate)
    spans: set[tuple[int, int]] = set()
    for literal in gate:
        hit = text.find(literal)
        while hit >= 0:
            start = text.rfind("\n", 0, hit) + 1
            end = text.find("\n", hit + len(literal))
            end = len(text) if end < 0 else end
            spans.add((start, end))
            hit = text.find(literal, end)
    return sorted(spans)


def _regex_spans(text: str, gate: re.Pattern[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    m = gate.search(text)
    while m:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        spans.append((start, end))
        m = gate.search(text, end)
    return spans


def gated_lines(text: str, gates: list[tuple[Gate, tuple[str, ...]]]) -> dict[int, tuple[int, set[str]]]:
    """Line start -> (line end, names of the gates that selected the line)."""
    lines: dict[int, tuple[int, set[str]]] = {}
    for gate, names in gates:
        for start, end in line_spans(text, gate):
            lines.setdefault(start, (end, set()))[1].update(names)
    return lines


MAX_NODES = 10000


def expand_nodelist(spec: str) -> list[str]:
    """Expand one Slurm host expression such as ``m9g-1-[3-4,7]`` into host names."""
    m = re.fullmatch(r"([\w-]*)\[([\d,\-]+)\]([\w-]*)", spec)
    if not m:
        return [spec]
    prefix, body, suffix = m.groups()
    hosts: list[str] = []
    for part in body.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (hi or lo).isdigit():  # bounded as it goes: a range in the text never drives memory
            stop = min(int(hi or lo) + 1, int(lo) + MAX_NODES - len(hosts))
            hosts.extend(f"{prefix}{i:0{len(lo)}d}{suffix}" for i in range(int(lo), stop))
        if len(hosts) >= MAX_NODES:
            break
    return hosts


def compress_nodes(names: list[str]) -> str:
    """``node-3,node-4`` as ``node-[3-4]`` when consecutive."""
    nums = [int(n.split("-")[1]) for n in names]
    if len(nums) > 1 and nums == list(range(nums[0], nums[0] + len(nums))):
        return f"node-[{nums[0]}-{nums[-1]}]"
    return ",".join(names)


LIT_SUFFIX = r"(?P<lsfx>(?:\.[A-Za-z][\w-]*)+)?(?P<lbr>\])?(?::(?P<lport>\d{1,5})(?![\d:]))?"
