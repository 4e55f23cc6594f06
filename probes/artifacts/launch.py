"""Launch commands, batch scripts, manifests and env dumps -> LaunchSpec evidence (the launch contract).

A command is recognised by its first words (``rules/artifacts/launch.yaml``: launchers, then each
launcher's option names); ``#SBATCH`` directives make one ``sbatch`` spec, whose body says whether it
starts its tasks with srun/mpirun; ``export``/``env`` lines and Kubernetes env lists make an ``env`` or
``kubernetes`` spec. A launch command sees the variables exported above it in the same file.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

from diagnose.evidence import LaunchSpec
from diagnose.probes.artifacts.source import Source, to_bool, to_int
from diagnose.probes.artifacts.spec import FamilySpec, family, strings_in

__all__ = ["launcher_of", "parse", "split_command", "visible_count"]

_INT_FIELDS = ("nodes", "procs_per_node", "world_size", "gpus_per_node", "gpus_per_task", "cpus_per_task",
               "master_port")
_STR_FIELDS = ("rdzv_backend", "rdzv_endpoint", "rdzv_id", "master_addr", "mem", "mem_per_cpu", "wrapper", "hosts",
               "node_rank")
BATCH_STARTERS = ("srun", "mpirun")


def visible_count(value: str) -> int:
    """Devices a CUDA_VISIBLE_DEVICES value leaves visible ("" and "-1" leave none)."""
    items = [v for v in value.strip().strip("\"'").split(",") if v.strip()]
    return 0 if not items or items[0].strip().startswith("-") or items[0] == "NoDevFiles" else len(items)


def _kept(key: str, spec: FamilySpec) -> bool:
    return key in spec.tables["env"] or any(key.startswith(p) for p in spec.tables["keep_prefixes"])


def _tokens(cmd: str) -> list[str]:
    try:
        return shlex.split(cmd, comments=True)
    except ValueError:  # an unbalanced quote in a pasted line
        return cmd.split()


def _launcher(tokens: list[str], spec: FamilySpec) -> tuple[str, int] | None:
    """(launcher name, index of its first option) when ``tokens`` start with a launcher."""
    if not tokens:
        return None
    prog = tokens[0].rsplit("/", 1)[-1]
    for entry in spec.tables["launchers"]:
        if "program" in entry and prog == entry["program"]:
            sub = entry.get("subcommand")
            if sub is None:
                return entry["name"], 1
            if len(tokens) > 1 and tokens[1] == sub:
                return entry["name"], 2
        if "script" in entry and prog in spec.tables["pythons"] and len(tokens) > 1 \
                and tokens[1].rsplit("/", 1)[-1] == entry["script"]:
            return entry["name"], 2
        if "module" in entry and prog in spec.tables["pythons"]:
            mods = [i for i, t in enumerate(tokens[1:4], 1) if t == "-m"]
            if mods and mods[0] + 1 < len(tokens) and tokens[mods[0] + 1] == entry["module"]:
                at = mods[0] + 2
                if entry["name"] == "lightning" and at < len(tokens) and tokens[at] == "run":
                    at += 2 if at + 1 < len(tokens) and tokens[at + 1] == "model" else 1
                return entry["name"], at
    return None


def launcher_of(tokens: list[str], spec: FamilySpec | None = None) -> str | None:
    """The launcher a command's words (after ``split_command``) start, or None."""
    found = _launcher(tokens, spec or family("launch"))
    return found[0] if found else None


def split_command(cmd: str, spec: FamilySpec | None = None) -> tuple[dict[str, str], list[str]]:
    """Leading ``VAR=value`` assignments and the command's words after wrappers (nohup, time, numactl ...)."""
    spec = spec or family("launch")
    tokens = _tokens(cmd)
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        key, eq, val = tok.partition("=")
        if eq and key.isidentifier() and key.upper() == key:
            env[key] = val
        elif tok.rsplit("/", 1)[-1] in spec.tables["skip_words"]:
            while i + 1 < len(tokens) and tokens[i + 1].startswith("-"):
                i += 1
        else:
            break
        i += 1
    return env, tokens[i:]


def _options(name: str, tokens: list[str], at: int, spec: FamilySpec) -> tuple[dict[str, Any], int]:
    """Options of launcher ``name`` from ``tokens[at:]``; returns them and the index of the first operand."""
    known = spec.tables["options"].get(name, {})
    flags = set(spec.tables["flags"].get(name, ()))
    out: dict[str, Any] = {}
    i = at
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-") or tok == "-":
            break
        body, eq, val = tok.lstrip("-").partition("=")
        opt = body.replace("-", "_")
        if opt in ("m", "module") and name in ("torchrun", "torch.distributed.launch", "accelerate"):
            break
        if not tok.startswith("--") and len(opt) > 1 and opt not in known and opt not in flags and opt[0] in known:
            opt, val, eq = opt[0], opt[1:], "="  # -N2
        if eq:
            out[opt] = val
        elif opt in flags:
            out[opt] = True
        elif opt in spec.tables["list_options"].get(name, ()):  # nargs='*': the count of the values that follow
            n = 0
            while i + 1 < len(tokens) and not tokens[i + 1].startswith("-") and n < 4096:
                n, i = n + 1, i + 1
            out[opt] = str(n)
        elif i + 1 < len(tokens):
            out[opt] = tokens[i + 1]
            i += 1
        i += 1
    return {known.get(k, k): v for k, v in out.items()}, i


def _fields(opts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _INT_FIELDS:
        if key in opts and (n := to_int(opts[key])) is not None:
            out[key] = n
    for key in _STR_FIELDS:
        if key in opts and isinstance(opts[key], str):
            out[key] = opts[key]
    if "gres" in opts and "gpu" in str(opts["gres"]) and (n := to_int(opts["gres"])) is not None:
        out.setdefault("gpus_per_node", n)
    if "gpus" in opts and (n := to_int(opts["gpus"])) is not None and out.get("nodes", 1) == 1:
        out.setdefault("gpus_per_node", n)
    if "map_by" in opts and str(opts["map_by"]).startswith("ppr:"):
        parts = str(opts["map_by"]).split(":")
        if len(parts) >= 3 and parts[1].isdigit() and parts[2] == "node":
            out.setdefault("procs_per_node", int(parts[1]))
    if "exclusive" in opts:
        out["exclusive"] = bool(to_bool(opts["exclusive"]) is not False)
    if out.get("rdzv_endpoint") is not None and not out.get("rdzv_backend"):
        out["rdzv_backend"] = "static"
    return out


def _script_options(args: list[str], names: set[str], dotted: bool = True) -> Iterator[tuple[str, str]]:
    """(name, value) of each of the script's own options named in ``names``: ``--name value``, ``--name=value``,
    ``-j 8`` (dashes read as underscores) and, with ``dotted``, Hydra's ``group.name=value``."""
    for i, tok in enumerate(args):
        body, eq, val = tok.lstrip("-").partition("=")
        key = body.replace("-", "_")
        last = key.rsplit(".", 1)[-1]
        if tok.startswith("-") and key in names:
            yield key, (val if eq else (args[i + 1] if i + 1 < len(args) else ""))
        elif dotted and not tok.startswith("-") and eq and "." in key and last in names:
            yield last, val


def _script_workers(args: list[str], spec: FamilySpec, table: str = "script_workers") -> int | None:
    """DataLoader workers per process named by the script's own arguments (``--num_workers 8``,
    ``--workers=8``, ``-j 8``, Hydra ``data.num_workers=8``); the names are data (``script_workers``; with
    ``table="script_world_size"`` the world size the script is told, ``--world_size 4``; with
    ``table="script_local_rank"`` a local rank typed for it, ``--local_rank 2``; with ``table="script_rank"`` the
    rank of a process started by hand, ``--rank 1``)."""
    for _, value in _script_options(args, set(spec.tables[table])):
        if (n := to_int(value)) is not None and 0 <= n < 100000:
            return n
    return None


def _counts_nodes(args: list[str], spec: FamilySpec) -> bool:
    """The script's own flags make its --world-size and --rank count nodes, each spawning its own processes
    (``script_world_size_unless``: pytorch/examples' --multiprocessing-distributed)."""
    return bool({t.lstrip("-").replace("-", "_") for t in args} & set(spec.tables["script_world_size_unless"]))


def _east_asian(word: str) -> bool:
    """The word holds CJK ideographs, kana, hangul or full-width punctuation (no script or module is named so)."""
    return any(0x3000 <= ord(ch) <= 0x9FFF or 0xAC00 <= ord(ch) <= 0xD7AF or 0xFF00 <= ord(ch) <= 0xFFEF
               for ch in word)


def _script_gpus(args: list[str], spec: FamilySpec) -> int | None:
    """GPUs the script's own arguments name: the ids of ``--gpu 0,1,2,3`` (one for a single id) or the count of
    ``--gpus 8``; the option names are data (``script_gpu_ids``, ``script_gpu_counts``)."""
    ids, counts = set(spec.tables["script_gpu_ids"]), set(spec.tables["script_gpu_counts"])
    for key, value in _script_options(args, ids | counts, dotted=False):
        parts = [p for p in value.strip("[]()'\"").split(",") if p.strip()]
        if len(parts) > 1 and all(p.strip().isdigit() for p in parts):
            return len(parts)
        n = to_int(value)
        if n is not None and 0 <= n < 4096 and value.strip().isdigit():
            return 1 if key in ids else n
    return None


def _with_env(fields: dict[str, Any], env: dict[str, str], spec: FamilySpec) -> dict[str, Any]:
    variables = {k: v for k, v in env.items() if _kept(k, spec)}
    if variables:
        fields["variables"] = variables
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        fields["cuda_visible_devices"] = cvd
        fields["visible_gpus"] = visible_count(cvd)
    return fields


def _command(src: Source, no: int, cmd: str, env: dict[str, str], spec: FamilySpec) -> list[LaunchSpec]:
    local, tokens = split_command(cmd, spec)
    found = _launcher(tokens, spec)
    if found is None:
        return []
    name, at = found
    opts, rest = _options(name, tokens, at, spec)
    if rest < len(tokens) and _east_asian(tokens[rest]):
        return []  # 'deepspeed 去full 微调70b时，...': a sentence that starts with a launcher's name, not a command
    fields = _with_env(_fields(opts), {**env, **local}, spec)
    if "procs_per_node" not in opts and name in spec.tables["default_procs_per_node"]:
        fields["procs_default"] = spec.tables["default_procs_per_node"][name]
    inner: list[LaunchSpec] = []
    if name == "openmmlab":
        fields.update(_openmmlab(tokens[rest:], {**env, **local}, spec))
    elif name in ("srun", "mpirun") and rest < len(tokens):
        inner = _command(src, no, shlex.join(tokens[rest:]), {**env, **local}, spec)
        if inner:
            fields["inner_launcher"] = inner[0].launcher
        fields["script"] = tokens[rest]
    elif rest < len(tokens):
        fields["script"] = tokens[rest + 1] if tokens[rest] == "-m" and rest + 1 < len(tokens) else tokens[rest]
        args = tokens[rest + (2 if tokens[rest] == "-m" else 1):]
        workers = _script_workers(args, spec)
        if workers is not None:
            fields["loader_workers"] = workers
        if (gpus := _script_gpus(args, spec)) is not None:
            fields["script_gpus"] = gpus
        if name in spec.tables["per_process_launchers"]:
            fields["script_local_rank"] = _script_workers(args, spec, "script_local_rank")
        told = None if _counts_nodes(args, spec) else _script_workers(args, spec, "script_world_size")
        if told is not None and told > 0:  # the script's own flag: a claim about the world, checked like its code
            inner = [LaunchSpec(launcher="code", world_size=told, provenance=src.prov(no), rank=src.rank,
                                text=f"{fields.get('script', 'the script')} --world_size {told}")]
    return [LaunchSpec(launcher=name, provenance=src.prov(no), rank=src.rank, text=cmd[:500], **fields), *inner]


def _openmmlab(operands: list[str], env: dict[str, str], spec: FamilySpec) -> dict[str, Any]:
    """``dist_train.sh CONFIG GPUS [options]``: the processes per node, the nodes (NNODES), the layout the config's
    name was tuned for ({N}xb{B}), the batch per GPU set with --cfg-options and whether --auto-scale-lr is on."""
    out: dict[str, Any] = {}
    if not operands:
        return out
    out["script"] = operands[0]
    if len(operands) > 1 and operands[1].isdigit():
        out["procs_per_node"] = int(operands[1])
    if (nodes := to_int(env.get("NNODES", ""))) is not None:
        out["nodes"] = nodes
    if m := spec.rx("config_name_layout").search(operands[0].rsplit("/", 1)[-1]):
        out["design_world"], out["design_batch"] = int(m.group("gpus")), int(m.group("batch"))
    keys = set(spec.tables["openmmlab_batch_keys"])
    for tok in operands[2:]:
        key, eq, val = tok.partition("=")
        if eq and key in keys and (n := to_int(val)) is not None:
            out["local_batch"] = n
        elif tok.lstrip("-") in spec.tables["openmmlab_auto_scale_lr"]:
            out["auto_scale_lr"] = True
    return out


def _by_hand(cmd: str, spec: FamilySpec) -> tuple[str, int, int] | None:
    """(script, rank, world size) of a process started by hand: plain python running a script told its own
    ``--rank`` and ``--world_size`` (the DDP tutorial's init_process_group(rank, world_size), one command per
    process, typed on each node or terminal)."""
    _, tokens = split_command(cmd, spec)
    if len(tokens) < 2 or tokens[0].rsplit("/", 1)[-1] not in spec.tables["pythons"] or tokens[1].startswith("-"):
        return None
    args = tokens[2:]
    if _counts_nodes(args, spec):
        return None
    world = _script_workers(args, spec, "script_world_size")
    rank = _script_workers(args, spec, "script_rank")
    if world is None or rank is None or world < 1:
        return None
    return tokens[1], rank, world


def _by_hand_specs(src: Source, seen: list[tuple[int, str, int, int, str]]) -> list[LaunchSpec]:
    """Processes started by hand: each command's world size is the script's claim (launcher ``code``); two or more
    commands of one script with different ranks are what was started (launcher ``by_hand``, one process each)."""
    out: list[LaunchSpec] = []
    scripts = {script for _, script, _, _, _ in seen}
    for script in sorted(scripts):
        rows = [r for r in seen if r[1] == script]
        ranks = {rank for _, _, rank, _, _ in rows}
        if len(ranks) < 2:
            continue
        first = rows[0][0]
        out.append(LaunchSpec(launcher="by_hand", world_size=len(ranks), script=script, provenance=src.prov(first),
                              rank=src.rank, text=" | ".join(r[4] for r in rows)[:500]))
        worlds = sorted({world for _, _, _, world, _ in rows})
        out += [LaunchSpec(launcher="code", world_size=w, provenance=src.prov(first), rank=src.rank,
                           text=f"{script} --world_size {w}") for w in worlds]
    return out


def _env_spec(src: Source, env: dict[str, str], first: int | None, spec: FamilySpec) -> list[LaunchSpec]:
    kept = {k: v for k, v in env.items() if _kept(k, spec)}
    if len(kept) < spec.tables["min_env_keys"]:
        return []
    fields: dict[str, Any] = {}
    for var, key in spec.tables["env"].items():
        if var in kept:
            fields[key] = kept[var]
    fields = _with_env({k: v for k, v in _fields(fields).items()}, kept, spec)
    k8s = any(m in kept for m in spec.tables["kubernetes_markers"])
    text = " ".join(f"{k}={v}" for k, v in list(kept.items())[:12])
    return [LaunchSpec(launcher="kubernetes" if k8s else "env", provenance=src.prov(first), rank=src.rank,
                       text=text[:500], **fields)]


def _after_assignments(cmd: str) -> list[str]:
    """The first words of a command after its leading ``VAR=value`` assignments (NNODES=1 PORT=29501 bash ...)."""
    words = cmd.split(None, 16)
    i = 0
    while i < len(words) - 1 and "=" in words[i] and words[i].split("=", 1)[0].isidentifier():
        i += 1
    return words[i:]


_SEPARATORS = (";", "&&", "||")
_MAX_SHELL_LINE = 4096  # longer lines are not commands a user typed: read whole, never walked character by character


def _shell_segments(cmd: str) -> list[str]:
    """The commands of a shell line joined by ``;``, ``&&`` or ``||`` (outside quotes), each on its own; a line
    without a separator (or longer than any typed command) is one segment."""
    if len(cmd) > _MAX_SHELL_LINE or not any(sep in cmd for sep in _SEPARATORS):
        return [cmd]
    out, cur, quote, i = [], [], "", 0
    while i < len(cmd):
        ch = cmd[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == ";" or cmd.startswith(("&&", "||"), i):
            out.append("".join(cur))
            cur = []
            i += 1 if ch == ";" else 2
            continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return [c.strip() for c in out if c.strip()] or [cmd]


_WORDS: dict[int, tuple[str, ...]] = {}


def _words(spec: FamilySpec) -> tuple[str, ...]:
    if id(spec) not in _WORDS:
        words = {e.get("program") for e in spec.tables["launchers"]} | set(spec.tables["pythons"])
        _WORDS[id(spec)] = tuple(sorted(w for w in words if w))
    return _WORDS[id(spec)]


def _gates(src: Source, spec: FamilySpec) -> tuple[set[str], set[str]]:
    """Launcher words and optional patterns this file can hold at all (cheap whole-text checks)."""
    present = strings_in(src.text, _words(spec))
    extras = {p.name for p in spec.present(src.text) if p.name in ("mp_spawn", "init_backend", "wrapper")}
    return present, extras


def parse(src: Source) -> list[LaunchSpec]:
    """Every launch command, batch script, env dump and spawn call in ``src``."""
    spec = family("launch")
    rx = spec.rx
    present, wanted = _gates(src, spec)
    sbatch = "#SBATCH" in src.text
    k8s = ("name:" in src.text and "value:" in src.text) or "nprocPerNode" in src.text or "nvidia.com/gpu" in src.text
    exports = "=" in src.text and spec.multiline["env_assignment"].search(src.text) is not None
    if not (present or wanted or sbatch or k8s or exports):
        return []  # nothing a launch could be made of: skip the line loop
    out: list[LaunchSpec] = []
    env: dict[str, str] = {}
    env_first: int | None = None
    directives: list[str] = []
    first_directive: int | None = None
    body: list[LaunchSpec] = []
    body_python = False
    body_runs = False  # a line after the #SBATCH directives runs something (not only shell set-up)
    setup_words = set(spec.tables["shell_setup_words"])
    k8s_key: str | None = None
    extras: dict[str, str] = {}
    pod: dict[str, str] = {}  # a PyTorchJob's nprocPerNode and its container's nvidia.com/gpu limit
    pythons = set(spec.tables["pythons"])
    by_hand: list[tuple[int, str, int, int, str]] = []  # (line, script, --rank, --world_size, command)
    for no, line in src.logical_lines():
        if sbatch and "#SBATCH" in line and (m := rx("sbatch_directive").match(line)):
            directives += _tokens(m.group("args").split(" #", 1)[0])
            first_directive = first_directive or no
            continue
        if k8s:
            if "name:" in line and (m := rx("k8s_env_name").match(line)):
                k8s_key = m.group("key")
                continue
            if k8s_key and "value:" in line and (m := rx("k8s_env_value").match(line)):
                env[k8s_key] = m.group("value")
                env_first = env_first or no
                k8s_key = None
                continue
            k8s_key = None
            for pat, key in (("k8s_nproc_per_node", "procs_per_node"), ("k8s_gpu_limit", "gpus_per_node")):
                if key not in pod and (m := rx(pat).match(line)):
                    pod[key], pod[f"{key}_line"] = m.group("value"), str(no)
        whole = line
        if line.startswith("`") and not line.startswith("``"):  # a command pasted as inline code: `CUDA_...=0 python ...`
            whole = line.strip("` ")
        lead = whole.lstrip()[:1]
        if lead and (lead in "$#%>(" or "@" in whole[:64]):
            m = rx("prompt").match(whole)
            whole = m.group("cmd") if m else whole
        consumed = False
        for cmd in _shell_segments(whole):  # 'export BS=16; rm -r out; CUDA_VISIBLE_DEVICES=0,1 python -m torch...'
            lead = cmd.lstrip()[:1]
            if "=" in cmd and (lead.isupper() or lead in "ed") and (m := rx("env_assignment").match(cmd)):
                env[m.group("key")] = m.group("value").strip("\"'")
                env_first = env_first or no
                consumed = True
                continue
            if first_directive is not None and not body_runs and (word := cmd.strip().split(None, 1)[:1]):
                body_runs = not word[0].startswith("#") and word[0] not in setup_words
            if present and any(w in cmd for w in present):
                head = {w.rsplit("/", 1)[-1] for w in _after_assignments(cmd)[:4]}
                if head & present:
                    found = _command(src, no, cmd, env, spec)
                    if not found and head & pythons and (hand := _by_hand(cmd, spec)):
                        by_hand.append((no, *hand, cmd.strip()))
                    out += found
                    if first_directive is not None:
                        body += found
                        body_python = body_python or (not found and bool(head & pythons))
                    consumed = True
                    continue
                if "`" in cmd:  # a command quoted inline in a sentence: "(the training command is `torchrun ...`)"
                    for m in rx("inline_command").finditer(cmd):
                        code = m.group("code")
                        if {w.rsplit("/", 1)[-1] for w in code.split(None, 4)[:4]} & present:
                            out += _command(src, no, code, env, spec)
        if consumed:
            continue
        for name in wanted:
            if name not in extras and (m := rx(name).search(line)):
                extras[name] = m.group(1) or ""
                extras[f"{name}_line"] = str(no)
    if first_directive is not None:
        opts, _ = _options("sbatch", ["sbatch", *directives], 1, spec)
        fields = _with_env(_fields(opts), env, spec)
        # a script cut before its first command shows nothing of how it starts the tasks: unknown, not "no"
        fields["launches_tasks"] = any(b.launcher in BATCH_STARTERS for b in body) if body_runs else None
        if body:
            fields["inner_launcher"] = body[0].launcher
        elif body_python:
            fields["inner_launcher"] = "python"
        out.insert(0, LaunchSpec(launcher="sbatch", provenance=src.prov(first_directive), rank=src.rank,
                                 text=" ".join(directives)[:500], **fields))
    out += _by_hand_specs(src, by_hand) if len(by_hand) > 1 else []
    if "mp_spawn" in extras:
        nprocs = to_int(extras["mp_spawn"]) if extras["mp_spawn"] else None
        out.append(LaunchSpec(launcher="mp.spawn", procs_per_node=nprocs, provenance=src.prov(int(extras["mp_spawn_line"])),
                              rank=src.rank, text=f"mp.spawn(nprocs={extras['mp_spawn'] or '?'})"))
    if out and (extras.get("init_backend") or extras.get("wrapper")):
        out = [s.model_copy(update={"backend": s.backend or extras.get("init_backend"),
                                    "wrapper": s.wrapper or extras.get("wrapper")}) for s in out]
    if env and not out:  # exported variables are already part of every launch in the file
        out += _env_spec(src, env, env_first, spec)
    if pod:
        out = _with_pod(src, out, pod)
    return out


def _with_pod(src: Source, out: list[LaunchSpec], pod: dict[str, str]) -> list[LaunchSpec]:
    """A PyTorchJob's ``nprocPerNode`` (an int, or auto/gpu/cpu: one per GPU or core, no count) and the GPUs its
    container asks for (``nvidia.com/gpu``) join the manifest's kubernetes spec (PET_NPROC_PER_NODE, which the
    operator sets from nprocPerNode, wins)."""
    fields = {k: n for k in ("procs_per_node", "gpus_per_node") if (n := to_int(pod.get(k, ""))) is not None}
    k8s = next((i for i, s in enumerate(out) if s.launcher == "kubernetes"), None)
    if k8s is not None:
        have = out[k8s]
        update = {k: v for k, v in fields.items() if getattr(have, k) is None}
        return [*out[:k8s], have.model_copy(update=update), *out[k8s + 1:]]
    if not fields:
        return out
    first = min(int(pod[f"{k}_line"]) for k in ("procs_per_node", "gpus_per_node") if f"{k}_line" in pod)
    text = ", ".join(f"{k}={pod[k]}" for k in ("procs_per_node", "gpus_per_node") if k in pod)
    return [*out, LaunchSpec(launcher="kubernetes", provenance=src.prov(first), rank=src.rank, text=text, **fields)]
