"""Which globals a checkpoint pickle may name harmlessly, and which are plainly dangerous.

A global outside the harmless set is reported as suspicious: loading the file
would import it and possibly call it. The dangerous set names the callables that
run commands, evaluate code or touch files, so the report can put them first.
"""

from __future__ import annotations

import re

HARMLESS: frozenset[str] = frozenset({
    # containers and plain values
    "collections.OrderedDict", "collections.defaultdict", "collections.deque", "collections.Counter",
    "builtins.set", "builtins.frozenset", "builtins.slice", "builtins.range", "builtins.complex",
    "builtins.bytearray", "builtins.bytes", "builtins.list", "builtins.dict", "builtins.tuple",
    "builtins.int", "builtins.float", "builtins.bool", "builtins.str", "builtins.object",
    "copyreg._reconstructor", "_codecs.encode", "datetime.datetime", "datetime.date",
    "datetime.timedelta", "datetime.timezone", "pathlib.PosixPath", "pathlib.WindowsPath",
    "pathlib.PurePosixPath", "uuid.UUID", "argparse.Namespace", "decimal.Decimal",
    # torch tensors, storages and their metadata
    "torch.Size", "torch.device", "torch.dtype", "torch.layout", "torch.memory_format",
    "torch.strided", "torch.sparse_coo", "torch.contiguous_format", "torch.channels_last",
    "torch.preserve_format", "torch.nn.parameter.Parameter", "torch._tensor._rebuild_from_type_v2",
    "torch.serialization._get_layout", "torch.storage.UntypedStorage", "torch.storage.TypedStorage",
    "torch.torch_version.TorchVersion",
    # numpy arrays, scalars, dtypes and RNG states
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct", "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar", "numpy.random._pickle.__randomstate_ctor",
    "numpy.random._pickle.__bit_generator_ctor", "numpy.random._pickle.__generator_ctor",
    "numpy.random.mtrand.RandomState",
})

_HARMLESS_PATTERNS = re.compile(
    r"^(?:torch\._utils\._rebuild_\w+"
    r"|torch\.(?:cuda\.)?\w*Storage"
    r"|torch\.(?:float|int|uint|bfloat|complex|bool|half|double|long|short|cfloat|cdouble|qint|quint)\w*"
    r"|torch\.float8_\w+"
    r"|numpy\.dtypes\.\w+DType"
    r"|torch\.distributed\.checkpoint\.(?:metadata|filesystem|planner)\.\w+"
    r"|torch\.distributed\._shard\.sharded_tensor\.(?:metadata\.\w+|api\.ShardedTensor|shard\.Shard)"
    r"|torch\.distributed\._shard\.metadata\.\w+"
    r"|torch\.distributed\._shard\.sharding_spec\.(?:\w+\.)?\w*ShardingSpec"
    r"|torch\.distributed\.remote_device\._remote_device"
    # DTensor (FSDP2, tensor parallel): the tensor, its spec, mesh and placements
    r"|torch\.distributed\.(?:tensor|_tensor)\.(?:DTensor|_api\.DTensor|api\.DTensor)"
    r"|torch\.distributed\.(?:tensor|_tensor)\.(?:_dtensor_spec|placement_types)\.\w+"
    r"|torch\.distributed\.device_mesh\.DeviceMesh|torch\.distributed\._mesh_layout\.\w+"
    r"|(?:pytorch_lightning|lightning\.pytorch|lightning\.fabric|lightning_fabric)\.\w+(?:\.\w+)*\.AttributeDict"
    r"|transformers\.(?:training_args|trainer_utils)\.\w+"
    r"|deepspeed\.runtime\.(?:zero\.config|config|fp16\.loss_scaler)\.\w+"
    r")$"
)

_DANGEROUS_MODULES = re.compile(
    r"^(?:os|posix|nt|subprocess|sys|shutil|socket|pty|importlib|runpy|code|codeop|ctypes|"
    r"pickle|_pickle|marshal|types|webbrowser|multiprocessing|asyncio|signal|tempfile|"
    r"urllib|http|ftplib|smtplib|commands|platform|pdb|timeit|cProfile|profile|torch\.hub)(?:\.|$)"
)
_DANGEROUS_NAMES: frozenset[str] = frozenset({
    "builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__", "builtins.open",
    "builtins.getattr", "builtins.setattr", "builtins.delattr", "builtins.globals",
    "builtins.vars", "builtins.input", "builtins.breakpoint", "builtins.exit", "builtins.quit",
    "operator.attrgetter", "operator.methodcaller", "operator.itemgetter", "functools.partial",
    "functools.reduce", "torch.load", "torch.jit.load", "numpy.load", "numpy.fromfile",
    "numpy.testing._private.utils.runstring", "builtins.memoryview",
})


def is_harmless(qualname: str) -> bool:
    """Whether loading this global is known to run no user or system code."""
    return qualname in HARMLESS or bool(_HARMLESS_PATTERNS.match(qualname))


def is_dangerous(qualname: str) -> bool:
    """Whether this global runs commands, evaluates code, imports, or touches files."""
    module = qualname.rsplit(".", 1)[0] if "." in qualname else qualname
    return qualname in _DANGEROUS_NAMES or bool(_DANGEROUS_MODULES.match(module))
