"""Reality checks of ``llmmath.parallel`` against PyTorch's own distributed code, on CPU with gloo.

``run(world_size)`` starts ``world_size`` processes (one process group, ``gloo`` backend), runs
every check in each of them and returns what each rank measured: nothing here computes an
expected value (``tests/test_distributed.py`` and the chapter *parallelism* compare the
measurements with ``llmmath``). The processes are forked from a ``forkserver`` that has imported
``torch`` once, so a second group does not pay for the import again.

Measured per rank:

- ``fsdp``: FSDP2 (``fully_shard``) on a tiny ``transformers`` Llama whose shapes do not divide the
  world size: each parameter's full shape, local and padded shard numel, its gradient's local
  numel, the AdamW state's local numel, and the collectives of one forward and backward
  (``CommDebugMode``, with the size of each collective's input).
- ``tp_hf``: tensor parallelism with ``transformers``' own plan for Qwen2 (``base_model_tp_plan``:
  ``colwise`` -> ``ColwiseParallel``, ``rowwise`` -> ``RowwiseParallel``): local shapes of the
  layers' parameters, collectives of a forward and a backward.
- ``tp_megatron``: the same model with one ``PrepareModuleInput`` per attention and MLP block (the
  input made a replicated DTensor once, as Megatron-LM's ``f`` operator): collectives.
- ``block``: a GPT layer (pre-LN, dropout, GELU MLP) with tensor parallelism, with and without
  sequence parallelism: collectives, and the bytes of the distinct tensors autograd saves for the
  backward pass (``torch.autograd.graph.saved_tensors_hooks``, parameters excluded).
- ``pipeline``: ``torch.distributed.pipelining`` schedules GPipe, 1F1B and interleaved 1F1B on a
  stack of layers: the order of the forward and backward chunks each rank runs, and the largest
  number of micro-batches whose activations it held (``PipelineStage.fwd_cache``); and the
  zero-bubble schedules (``ScheduleInterleavedZeroBubble``, ``ScheduleZBVZeroBubble``,
  ``ScheduleDualPipeV``): the order of forwards, input-gradient, weight-gradient and whole backwards.
- ``zero``: ZeRO-1, -2 and -3 steps of two micro-batches with FSDP2 (``fully_shard``): ZeRO-3 as
  FSDP2 runs by default; ZeRO-2 with ``reshard_after_forward=False`` and
  ``set_reshard_after_backward(False)`` (the parameters are gathered once per step, the gradients
  reduce-scattered after each micro-batch); ZeRO-1 with
  gradient synchronisation only on the last micro-batch (one reduce-scatter per step, as torchtitan
  runs FSDP with pipeline parallelism): each collective's op, size, micro-batch and phase.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import queue
import tempfile
import traceback
from typing import Any

#: Shapes of the tiny models (odd sizes so that FSDP pads and shards differ across ranks).
LLAMA = dict(model_type="llama", vocab_size=97, hidden_size=28, intermediate_size=38, num_hidden_layers=2,
             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=False)
QWEN2 = dict(model_type="qwen2", vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64, tie_word_embeddings=False)
#: The GPT layer of the ``block`` check: hidden size, heads, MLP width, batch, sequence, dropout.
BLOCK = dict(h=32, heads=8, ffn=128, batch=2, seq=8, p=0.1)
#: Batch and sequence of the model checks.
BATCH, SEQ = 2, 8
#: Pipeline checks: layers per stage chunk, width, micro-batches per pipeline size.
PIPE = dict(width=8, microbatches_per_stage=2)


def _setup(rank: int, world: int, init_file: str) -> None:
    import warnings

    devnull = os.open(os.devnull, os.O_WRONLY)  # keep gloo's and torch's notices out of the caller's output
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)


def _comm_mode(world: int):
    """``CommDebugMode`` that also records each collective's op, phase and message size ``M`` (the
    whole tensor: an all-reduce's tensor, a reduce-scatter's input, an all-gather's output)."""
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.debug._comm_mode import NATIVE_TO_PY_MAPPING, c10d_collective_ops

    class SizedCommMode(CommDebugMode):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[dict[str, Any]] = []
            self.microbatch = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = super().__torch_dispatch__(func, types, args, kwargs)
            packet = getattr(func, "_overloadpacket", None)
            if out is not NotImplemented and packet is not None and (
                    packet in self.comm_registry or packet in c10d_collective_ops):
                name = str(NATIVE_TO_PY_MAPPING.get(packet, packet)).split(".")[-1]
                tensors = _tensors(args)
                # functional all-gathers take only the shard; c10d's take the output as well
                numel = tensors[0].numel() * world if name == "all_gather_into_tensor" else max(
                    t.numel() for t in tensors)
                self.records.append(dict(op=name, backward=bool(self.advanced_module_tracker.is_bw),
                                         numel=int(numel), bytes=int(numel * tensors[0].element_size()),
                                         microbatch=self.microbatch))
            return out

    return SizedCommMode()


def _tensors(args: Any) -> list[Any]:
    import torch

    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(_tensors(a))
    return out


def _hf_model(cfg: dict[str, Any]) -> Any:
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model(**cfg)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config)


# --------------------------------------------------------------------------------------- FSDP2
def _check_fsdp(rank: int, world: int) -> dict[str, Any]:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FSDPModule, fully_shard

    mesh = init_device_mesh("cpu", (world,))
    model = _hf_model(LLAMA)
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    units = [[f"model.layers.{i}.{n}" for n, _ in layer.named_parameters()]
             for i, layer in enumerate(model.model.layers)]
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    names = {id(p): n for n, p in model.named_parameters()}
    padded = {}
    for module in model.modules():
        if isinstance(module, FSDPModule):
            group = module._get_fsdp_state()._fsdp_param_group
            for fp in group.fsdp_params if group else ():
                padded[names[id(fp.sharded_param)]] = math.prod(fp.padded_sharded_param_size)
    local = {n: p.to_local().numel() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, LLAMA["vocab_size"], (BATCH, SEQ), generator=torch.Generator().manual_seed(rank))
    comm = _comm_mode(world)
    with comm:
        model(input_ids=ids, labels=ids).loss.backward()
    grads = {n: p.grad.to_local().numel() for n, p in model.named_parameters()}
    opt.step()
    state = {names[id(p)]: sum(v.to_local().numel() for k, v in s.items() if k != "step")
             for p, s in opt.state.items()}
    root = [n for n in shapes if not any(n in u for u in units)]
    return dict(shapes=shapes, local=local, padded=padded, grads=grads, optimizer=state,
                units=[root, *units], comm=comm.records)


# ----------------------------------------------------------------------------- tensor parallel
def _check_tp(rank: int, world: int, megatron: bool) -> dict[str, Any]:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        parallelize_module,
    )

    mesh = init_device_mesh("cpu", (world,))
    model = _hf_model(QWEN2)
    styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    plan = type(model.config).base_model_tp_plan
    for layer in model.model.layers:
        layer_plan = {key.split("layers.*.")[1]: styles[style]() for key, style in plan.items()}
        if megatron:  # one Replicate DTensor feeds q, k, v (gate, up): one all-reduce in the backward
            layer_plan["self_attn"] = PrepareModuleInput(
                input_kwarg_layouts={"hidden_states": Replicate()},
                desired_input_kwarg_layouts={"hidden_states": Replicate()})
            layer_plan["mlp"] = PrepareModuleInput(input_layouts=(Replicate(),), desired_input_layouts=(Replicate(),))
        parallelize_module(layer, mesh, layer_plan)
    local = {n: tuple(p.to_local().shape) if hasattr(p, "to_local") else tuple(p.shape)
             for n, p in model.model.layers.named_parameters()}
    full = {n: tuple(p.shape) for n, p in model.model.layers.named_parameters()}
    ids = torch.randint(0, QWEN2["vocab_size"], (BATCH, SEQ), generator=torch.Generator().manual_seed(0))
    comm = _comm_mode(world)
    with comm:
        model(input_ids=ids, labels=ids).loss.backward()
    return dict(local=local, full=full, comm=comm.records)


def _gpt_block(torch: Any, nn: Any) -> Any:
    h, heads, ffn, p = BLOCK["h"], BLOCK["heads"], BLOCK["ffn"], BLOCK["p"]
    d = h // heads

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(h, h) for _ in range(4))
            self.drop = nn.Dropout(p)

        def forward(self, x):  # noqa: ANN001, ANN202
            b, s, _ = x.shape
            q, k, v = (f(x).view(b, s, -1, d).transpose(1, 2) for f in (self.q, self.k, self.v))
            probs = self.drop(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1))
            return self.o((probs @ v).transpose(1, 2).reshape(b, s, -1))

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(h, ffn), nn.GELU(), nn.Linear(ffn, h)

        def forward(self, x):  # noqa: ANN001, ANN202
            return self.fc2(self.act(self.fc1(x)))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.attn, self.drop1 = nn.LayerNorm(h), Attention(), nn.Dropout(p)
            self.ln2, self.mlp, self.drop2 = nn.LayerNorm(h), MLP(), nn.Dropout(p)

        def forward(self, x):  # noqa: ANN001, ANN202
            x = x + self.drop1(self.attn(self.ln1(x)))
            return x + self.drop2(self.mlp(self.ln2(x)))

    return Block()


def _check_block(rank: int, world: int, sp: bool) -> dict[str, Any]:
    import torch
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    block = _gpt_block(torch, nn)
    seq_layout = Shard(1) if sp else Replicate()
    plan = {
        "attn": PrepareModuleInput(input_layouts=(seq_layout,), desired_input_layouts=(Replicate(),)),
        "attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
        "attn.o": RowwiseParallel(output_layouts=seq_layout),
        "mlp": PrepareModuleInput(input_layouts=(seq_layout,), desired_input_layouts=(Replicate(),)),
        "mlp.fc1": ColwiseParallel(), "mlp.fc2": RowwiseParallel(output_layouts=seq_layout),
    }
    if sp:
        plan.update({"ln1": SequenceParallel(), "ln2": SequenceParallel()})
    parallelize_module(block, mesh, plan)
    b, s, h = BLOCK["batch"], BLOCK["seq"], BLOCK["h"]
    x = torch.randn(b, s, h, generator=torch.Generator().manual_seed(1))
    if sp:
        x = x.chunk(world, dim=1)[rank].contiguous()
    x.requires_grad_(True)

    def storage(t: Any) -> Any:
        return (t._local_tensor if isinstance(t, DTensor) else t).untyped_storage()

    params = {storage(p).data_ptr() for p in block.parameters()}
    saved: dict[int, int] = {}

    def pack(t: Any) -> Any:
        st = storage(t)
        if st.data_ptr() not in params and st.data_ptr() != x.untyped_storage().data_ptr():
            saved[st.data_ptr()] = st.nbytes()
        return t

    comm = _comm_mode(world)
    with comm, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = block(x)
        out.sum().backward()
    input_bytes = x.numel() * x.element_size()  # the layer input is saved by ln1 (x is a leaf here)
    norm_grads = {n: str(p.grad.placements) if isinstance(p.grad, DTensor) else "local"
                  for n, p in block.named_parameters() if n.startswith("ln")}
    return dict(saved_bytes=sum(saved.values()) + input_bytes, comm=comm.records,
                local_seq=x.shape[1], norm_grad_placements=norm_grads)


# -------------------------------------------------------------------------------------- pipeline
def _check_pipeline(rank: int, world: int) -> dict[str, Any]:
    import torch
    from torch import nn
    from torch.distributed.pipelining import (
        PipelineStage,
        Schedule1F1B,
        ScheduleDualPipeV,
        ScheduleGPipe,
        ScheduleInterleaved1F1B,
        ScheduleInterleavedZeroBubble,
        ScheduleZBVZeroBubble,
    )

    w = PIPE["width"]
    out: dict[str, Any] = {}
    cases = [("gpipe", ScheduleGPipe, 1, world), ("gpipe", ScheduleGPipe, 1, 2 * world),
             ("1f1b", Schedule1F1B, 1, world), ("1f1b", Schedule1F1B, 1, 2 * world),
             ("interleaved", ScheduleInterleaved1F1B, 2, world), ("interleaved", ScheduleInterleaved1F1B, 2, 2 * world),
             ("interleaved_zb", ScheduleInterleavedZeroBubble, 2, 2 * world),
             ("zbv", ScheduleZBVZeroBubble, 2, 2 * world), ("dualpipev", ScheduleDualPipeV, 2, 2 * world)]
    for name, cls, v, m in cases:
        torch.manual_seed(0)
        n_stages = world * v
        stages, log, peak = [], [], [0]
        mine = (rank, n_stages - 1 - rank) if name in ("zbv", "dualpipev") else range(rank, n_stages, world)
        for k in mine:
            stages.append(PipelineStage(nn.Sequential(nn.Linear(w, w), nn.GELU()), k, n_stages, torch.device("cpu")))
        for stage in stages:
            _record(stage, stages, log, peak)
        schedule = cls(stages if v > 1 else stages[0], n_microbatches=m, loss_fn=lambda y, t: ((y - t) ** 2).mean())
        x = torch.randn(m, w, generator=torch.Generator().manual_seed(2))
        target = torch.randn(m, w, generator=torch.Generator().manual_seed(3))
        has_first = any(st.is_first for st in stages)
        has_last = any(st.is_last for st in stages)
        kwargs = {"target": target, "losses": []} if has_last else {}
        schedule.step(x, **kwargs) if has_first else schedule.step(**kwargs)
        out[f"{name}-m{m}"] = dict(schedule=name, virtual_stages=v, microbatches=m, actions=log, peak=peak[0])
    return out


# ------------------------------------------------------------------------------------ ZeRO 1/2/3
def _check_zero(rank: int, world: int) -> dict[str, Any]:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    out: dict[str, Any] = {}
    for stage in (1, 2, 3):
        model = _hf_model(LLAMA)
        keep = {} if stage == 3 else {"reshard_after_forward": False}  # ZeRO-1/2: gathered for the whole step
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh, **keep)
        fully_shard(model, mesh=mesh, **keep)
        if stage < 3:
            model.set_reshard_after_backward(False)
        records = []
        for mb in range(ZERO_MICROBATCHES):
            if stage == 1:  # one reduce-scatter, after the last micro-batch
                model.set_requires_gradient_sync(mb == ZERO_MICROBATCHES - 1)
            ids = torch.randint(0, LLAMA["vocab_size"], (BATCH, SEQ),
                                generator=torch.Generator().manual_seed(10 * rank + mb))
            comm = _comm_mode(world)  # one per micro-batch: the mode's module tracker spans one pass
            comm.microbatch = mb
            with comm:
                model(input_ids=ids, labels=ids).loss.backward()
            records += comm.records
        out[f"zero{stage}"] = records
    return out


#: Micro-batches per step of the ``zero`` check.
ZERO_MICROBATCHES = 2


#: Imported once by the forkserver, so that every worker it forks has them.
PRELOAD = ("torch", "torch.distributed.fsdp", "torch.distributed.tensor.parallel", "torch.distributed.tensor.debug",
           "torch.distributed.pipelining", "transformers", "transformers.models.llama.modeling_llama",
           "transformers.models.qwen2.modeling_qwen2")

def _record(stage: Any, stages: list[Any], log: list[tuple[str, int, int]], peak: list[int]) -> None:
    """Wrap ``stage``'s forward and backward of one chunk: log each, and keep in ``peak`` the most
    micro-batches whose activations the rank's stages hold (``fwd_cache``) after a forward."""
    forward, backward, k = stage.forward_one_chunk, stage.backward_one_chunk, stage.stage_index
    weight = stage.backward_weight_one_chunk

    def forward_one_chunk(mb, *args, **kwargs):  # noqa: ANN001, ANN202
        result = forward(mb, *args, **kwargs)
        log.append(("F", k, mb))
        peak[0] = max(peak[0], sum(len(st.fwd_cache) for st in stages))
        return result

    def backward_one_chunk(mb, *args, **kwargs):  # noqa: ANN001, ANN202
        log.append(("B" if kwargs.get("full_backward", True) else "I", k, mb))
        return backward(mb, *args, **kwargs)

    def backward_weight_one_chunk(mb, *args, **kwargs):  # noqa: ANN001, ANN202
        log.append(("W", k, mb))
        return weight(mb, *args, **kwargs)

    stage.forward_one_chunk, stage.backward_one_chunk = forward_one_chunk, backward_one_chunk
    stage.backward_weight_one_chunk = backward_weight_one_chunk


def timeline(orders: list[list[tuple[str, int, int]]], n_stages: int, t_f: float,
             t_b: float, t_w: float = 0.0) -> list[list[tuple[float, float, str, int, int]]]:
    """When each rank runs each chunk of its ``orders`` if each forward takes ``t_f``, each
    backward ``t_b`` (split into an input-gradient part ``I`` of ``t_b`` and a weight-gradient part
    ``W`` of ``t_w`` by the zero-bubble schedules; a whole ``B`` then takes ``t_b + t_w``), and a
    chunk waits for its input (the forward of the previous stage, the input gradient of the next)
    and for the rank's previous chunk: brute-force list scheduling of the order a schedule runs.
    Returns ``(start, end, kind, stage, micro-batch)`` per rank."""
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * len(orders)
    pos = [0] * len(orders)
    out: list[list[tuple[float, float, str, int, int]]] = [[] for _ in orders]
    span = {"F": t_f, "I": t_b, "W": t_w, "B": t_b + t_w}
    while any(pos[r] < len(orders[r]) for r in range(len(orders))):
        progressed = False
        for r, order in enumerate(orders):
            if pos[r] == len(order):
                continue
            kind, k, mb = order[pos[r]]
            deps = [("F", k - 1, mb)] if kind == "F" and k > 0 else []
            if kind in ("B", "I"):
                deps = [("F", k, mb)] + ([("G", k + 1, mb)] if k < n_stages - 1 else [])
            if kind == "W":
                deps = [("G", k, mb)]
            if all(d in done for d in deps):
                start = max([free[r]] + [done[d] for d in deps])
                free[r] = done[(kind, k, mb)] = start + span[kind]
                if kind in ("B", "I"):
                    done[("G", k, mb)] = free[r]
                out[r].append((start, free[r], kind, k, mb))
                pos[r] += 1
                progressed = True
        if not progressed:
            raise RuntimeError("the orders deadlock")
    return out


def simulate(orders: list[list[tuple[str, int, int]]], n_stages: int, t_f: float, t_b: float,
             t_w: float = 0.0) -> list[float]:
    """Idle share of each rank's time in :func:`timeline` (the bubble of the executed order)."""
    runs = timeline(orders, n_stages, t_f, t_b, t_w)
    span = max(run[-1][1] for run in runs if run)
    return [1 - sum(end - start for start, end, *_ in run) / span for run in runs]


def schedule_orders(schedule: str, pp: int, microbatches: int, virtual_stages: int = 1) -> list[list[tuple]]:
    """The order of forward and backward chunks each rank runs under PyTorch's ``schedule``
    (``gpipe``, ``1f1b``, ``interleaved``), read from the schedule's own action table
    (``pipeline_order``, built with mock stages: no process group needed)."""
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    names = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "Interleaved1F1B"}
    ops = get_schedule_ops(names[schedule], pp, microbatches,
                           num_stages_per_rank=virtual_stages if schedule == "interleaved" else None)
    return [[(a.computation_type.value, a.stage_index, a.microbatch_index) for a in rank
             if a is not None and a.computation_type.value in ("F", "B")] for rank in ops]


def peak_held(order: list[tuple]) -> int:
    """The most micro-batch chunks a rank running ``order`` holds between a forward and its backward."""
    held = peak = 0
    for kind, _, _ in order:
        held += 1 if kind == "F" else -1
        peak = max(peak, held)
    return peak


CHECKS = ("fsdp", "tp_hf", "tp_megatron", "block", "block_sp", "pipeline", "zero")


def _worker(rank: int, world: int, init_file: str, checks: tuple[str, ...], results: Any) -> None:
    try:
        _setup(rank, world, init_file)
        import torch.distributed as dist

        out: dict[str, Any] = {}
        runners = {"fsdp": lambda: _check_fsdp(rank, world), "tp_hf": lambda: _check_tp(rank, world, False),
                   "tp_megatron": lambda: _check_tp(rank, world, True),
                   "block": lambda: _check_block(rank, world, False),
                   "block_sp": lambda: _check_block(rank, world, True),
                   "pipeline": lambda: _check_pipeline(rank, world),
                   "zero": lambda: _check_zero(rank, world)}
        for name in checks:
            out[name] = runners[name]()
            dist.barrier()
        dist.destroy_process_group()
        results.put((rank, out, None))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        results.put((rank, None, traceback.format_exc()))


def run(world_size: int, checks: tuple[str, ...] = CHECKS, timeout: float = 600) -> list[dict[str, Any]]:
    """Run ``checks`` (a subset of :data:`CHECKS`) in ``world_size`` processes and return each rank's
    measurements, in rank order. Raises ``RuntimeError`` with the worker's traceback on failure."""
    unknown = set(checks) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown checks {sorted(unknown)}; known: {CHECKS}")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD) + [__name__])
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "init")
        results = ctx.Queue()
        procs = [ctx.Process(target=_worker, args=(r, world_size, init_file, tuple(checks), results))
                 for r in range(world_size)]
        for p in procs:
            p.start()
        collected: dict[int, dict[str, Any]] = {}
        try:
            for _ in procs:
                rank, out, error = results.get(timeout=timeout)
                if error is not None:
                    raise RuntimeError(f"rank {rank} failed:\n{error}")
                collected[rank] = out
        except queue.Empty as exc:
            raise RuntimeError(f"the {world_size} workers did not finish within {timeout} s") from exc
        finally:
            for p in procs:
                p.join(timeout=30)
                if p.is_alive():
                    p.kill()
    return [collected[r] for r in range(world_size)]
