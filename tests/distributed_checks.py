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
  reduce-scattered after each micro-batch); FSDP's ``SHARD_GRAD_OP`` (``reshard_after_forward=False``
  only: gathered again in each micro-batch's forward); ZeRO-1 with
  gradient synchronisation only on the last micro-batch (one reduce-scatter per step, as torchtitan
  runs FSDP with pipeline parallelism): each collective's op, size, micro-batch and phase; the bytes
  of the whole (unsharded) parameters alive after the first forward; after an AdamW step, the bytes
  of each rank's storages of parameters, gradients and optimizer states.
- ``zero_redundancy``: ``torch.distributed.optim.ZeroRedundancyOptimizer`` (ZeRO-1 in plain PyTorch)
  around AdamW: each rank's optimizer-state numel and the broadcasts of one step.
- ``ring``: a ring all-reduce written with gloo's point-to-point sends; the bytes and messages that
  each rank passes to ``isend`` (counted where they are sent) and the result against
  ``dist.all_reduce``.
- ``cp``: PyTorch 2.13's all-gather context parallelism (``cplib::flex_cp_allgather``, the op its
  all-gather style runs: keys and values all-gathered in the forward, their gradients
  reduce-scattered in the backward) around SDPA on the head-tail (zig-zag) split of PyTorch's
  ``_HeadTailLoadBalancer``: output and gradients against the unsharded attention, the collectives'
  sizes and phases, the query-key pairs of each rank's causal mask, and the bytes of the gathered
  keys and values that autograd keeps.
- ``moe``: a mixture-of-experts layer with node-limited routing whose tokens travel by
  ``all_to_all_single``, plainly (one copy per token and expert; output against the unsharded
  layer) and hierarchically (once per target node between GPUs of the same index, then inside the
  node): the bytes each rank sends in each all-to-all, and the tokens each rank receives.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import queue
import tempfile
import time
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
#: The ring all-reduce: elements per rank's chunk.
RING_CHUNK = 6
#: Context parallelism: batch, query heads, key/value heads, head size, sequence.
CP = dict(batch=1, heads=4, kv_heads=2, head_dim=8, seq=16)
#: The mixture of experts: experts, experts per token, width, tokens per rank, GPUs per "node",
#: nodes a token may be routed to.
MOE = dict(experts=8, k=3, h=8, tokens=12, gpus_per_node=2, max_nodes=1)


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
        stages, log, peak, alive = [], [], [0], _Alive()
        mine = (rank, n_stages - 1 - rank) if name in ("zbv", "dualpipev") else range(rank, n_stages, world)
        for k in mine:
            stages.append(PipelineStage(nn.Sequential(nn.Linear(w, w), nn.GELU()), k, n_stages, torch.device("cpu")))
        for stage in stages:
            _record(stage, stages, log, peak, alive)
        schedule = cls(stages if v > 1 else stages[0], n_microbatches=m, loss_fn=lambda y, t: ((y - t) ** 2).mean())
        x = torch.randn(m, w, generator=torch.Generator().manual_seed(2))
        target = torch.randn(m, w, generator=torch.Generator().manual_seed(3))
        has_first = any(st.is_first for st in stages)
        has_last = any(st.is_last for st in stages)
        kwargs = {"target": target, "losses": []} if has_last else {}
        schedule.step(x, **kwargs) if has_first else schedule.step(**kwargs)
        out[f"{name}-m{m}"] = dict(schedule=name, virtual_stages=v, microbatches=m, actions=log, peak=peak[0],
                                   alive=alive.peak)
    return out


# ------------------------------------------------------------------------------------ ZeRO 1/2/3
def _check_zero(rank: int, world: int) -> dict[str, Any]:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FSDPModule, fully_shard

    mesh = init_device_mesh("cpu", (world,))
    out: dict[str, Any] = {}
    for stage in (1, 2, "shard_grad_op", 3):
        model = _hf_model(LLAMA)
        keep = {} if stage == 3 else {"reshard_after_forward": False}  # ZeRO-1/2: gathered for the whole step
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh, **keep)
        fully_shard(model, mesh=mesh, **keep)
        if stage in (1, 2):
            model.set_reshard_after_backward(False)
        params = [fp for m in model.modules() if isinstance(m, FSDPModule)
                  for fp in (m._get_fsdp_state()._fsdp_param_group.fsdp_params
                             if m._get_fsdp_state()._fsdp_param_group else ())]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        records, whole = [], 0
        for mb in range(ZERO_MICROBATCHES):
            if stage == 1:  # one reduce-scatter, after the last micro-batch
                model.set_requires_gradient_sync(mb == ZERO_MICROBATCHES - 1)
            ids = torch.randint(0, LLAMA["vocab_size"], (BATCH, SEQ),
                                generator=torch.Generator().manual_seed(10 * rank + mb))
            comm = _comm_mode(world)  # one per micro-batch: the mode's module tracker spans one pass
            comm.microbatch = mb
            with comm:
                loss = model(input_ids=ids, labels=ids).loss
                if mb == 0:  # the whole parameters alive between the forward and the backward
                    whole = sum(t.untyped_storage().nbytes() for fp in params for t in fp.all_gather_outputs)
                loss.backward()
            records += comm.records
        opt.step()
        sharded = [fp.sharded_param for fp in params]
        storage = {"parameters": sum(p.to_local().untyped_storage().nbytes() for p in sharded),
                   "gradients": sum({p.grad.to_local().untyped_storage().data_ptr():  # one buffer per unit
                                     p.grad.to_local().untyped_storage().nbytes() for p in sharded}.values()),
                   "optimizer_states": sum(v.to_local().untyped_storage().nbytes() for st in opt.state.values()
                                           for key, v in st.items() if key != "step")}
        out[f"zero{stage}"] = records
        out[f"zero{stage}-memory"] = dict(whole_after_forward=whole, storage=storage)
    return out


# ------------------------------------------------------------------------ ZeroRedundancyOptimizer
def _check_zero_redundancy(rank: int, world: int) -> dict[str, Any]:
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer

    model = _hf_model(LLAMA)
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    for p in model.parameters():  # any gradient will do: the step's state and broadcasts are what is measured
        p.grad = torch.ones_like(p)
    comm = _comm_mode(world)
    with comm:
        opt.step()
    state = sum(v.numel() for st in opt.optim.state.values() for key, v in st.items() if key != "step")
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    return dict(state=state, comm=comm.records, shapes=shapes)


# ------------------------------------------------------------------------------------- the ring
def _check_ring(rank: int, world: int) -> dict[str, Any]:
    """Ring all-reduce with point-to-point sends: reduce-scatter then all-gather, each step sending
    one chunk to the right neighbour and receiving one from the left."""
    import torch
    import torch.distributed as dist

    x = torch.randn(RING_CHUNK * world, generator=torch.Generator().manual_seed(rank))
    want = x.clone()
    dist.all_reduce(want)
    chunks = list(x.clone().chunk(world))
    wire = {"bytes": 0, "messages": 0}
    right, left = (rank + 1) % world, (rank - 1) % world

    def exchange(send: int, receive: int, add: bool) -> None:
        payload = chunks[send].contiguous()
        wire["bytes"] += payload.numel() * payload.element_size()  # counted where it is sent
        wire["messages"] += 1
        request = dist.isend(payload, right)
        buffer = torch.empty_like(chunks[receive])
        dist.recv(buffer, left)
        request.wait()
        chunks[receive] = chunks[receive] + buffer if add else buffer

    for step in range(world - 1):  # after it, rank r holds the sum of chunk (r + 1) mod n
        exchange((rank - step) % world, (rank - step - 1) % world, True)
    for step in range(world - 1):
        exchange((rank + 1 - step) % world, (rank - step) % world, False)
    return dict(wire=wire, equal=bool(torch.allclose(torch.cat(chunks), want, atol=1e-5)),
                message_bytes=x.numel() * x.element_size())


# -------------------------------------------------------------------------- context parallelism
def _check_cp(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed._functional_collectives as funcol
    import torch.distributed.distributed_c10d as c10d
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental._context_parallel._cp_custom_ops import flex_cp_allgather
    from torch.distributed.tensor.experimental._context_parallel._load_balancer import _HeadTailLoadBalancer

    mesh = init_device_mesh("cpu", (world,))
    b, a, akv, d, s = CP["batch"], CP["heads"], CP["kv_heads"], CP["head_dim"], CP["seq"]
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(b, a, s, d, generator=gen, requires_grad=True)
    k, v = (torch.randn(b, akv, s, d, generator=gen, requires_grad=True) for _ in range(2))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    grad_out = torch.randn(ref.shape, generator=gen)
    ref.backward(grad_out)
    order = _HeadTailLoadBalancer(s, world, "cpu")._generate_indices()[0].long()  # the zig-zag order
    mine = order.view(world, -1)[rank]
    qs, ks, vs = (t.detach()[:, :, mine].clone().requires_grad_(True) for t in (q, k, v))
    records, phase, saved = [], ["forward"], set()
    originals = {"all_gather_single": funcol.all_gather_single, "reduce_scatter_single": funcol.reduce_scatter_single}

    def counted(name: str) -> Any:
        def collective(tensor, *args, **kwargs):  # noqa: ANN001, ANN202
            records.append(dict(op=name, phase=phase[0], input_bytes=tensor.numel() * tensor.element_size()))
            return originals[name](tensor, *args, **kwargs)
        return collective

    def pack(t: Any) -> Any:
        saved.add(t.untyped_storage().data_ptr())
        return t

    try:
        for name in originals:
            setattr(funcol, name, counted(name))
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            k_all, v_all = flex_cp_allgather(ks, vs, 2, c10d._get_process_group_name(mesh.get_group()))
            mask = mine[:, None] >= order[None, :]  # local queries against the gathered keys, in their order
            out = F.scaled_dot_product_attention(qs, k_all, v_all, attn_mask=mask, enable_gqa=True)
        kept = sum(t.untyped_storage().nbytes() for t in (k_all, v_all) if t.untyped_storage().data_ptr() in saved)
        phase[0] = "backward"
        out.backward(grad_out[:, :, mine])
    finally:
        for name, fn in originals.items():
            setattr(funcol, name, fn)
    close = [bool(torch.allclose(x, y, atol=1e-5)) for x, y in
             ((out, ref[:, :, mine]), (qs.grad, q.grad[:, :, mine]), (ks.grad, k.grad[:, :, mine]),
              (vs.grad, v.grad[:, :, mine]))]
    return dict(equal=close, records=records, pairs=int(mask.sum()), kept_kv_bytes=kept,
                positions=mine.tolist())


# -------------------------------------------------------------------------- expert parallelism
def _check_moe(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from torch import nn

    E, k, h, T = MOE["experts"], MOE["k"], MOE["h"], MOE["tokens"]
    g = min(world, MOE["gpus_per_node"])
    nodes, per_gpu = world // g, E // world
    torch.manual_seed(0)  # the same router and experts on every rank
    router = nn.Linear(h, E, bias=False)
    experts = nn.ModuleList(nn.Linear(h, h) for _ in range(E))

    def tokens(src: int) -> Any:
        return torch.randn(T, h, generator=torch.Generator().manual_seed(100 + src))

    def a2a(rows: Any, sizes: list[int], group: Any = None) -> tuple[Any, list[int], int]:
        """Rows to each member (sizes[i] to member i); returns them, the sizes received and the
        bytes this rank put on the wire (rows to other members)."""
        n, me = dist.get_world_size(group), dist.get_group_rank(group, rank) if group else rank
        counts = torch.tensor(sizes)
        back = torch.empty(n, dtype=counts.dtype)
        dist.all_to_all_single(back, counts, group=group)  # metadata: how many rows come
        rows = rows.contiguous()
        recv = torch.empty(int(back.sum()), *rows.shape[1:], dtype=rows.dtype)
        dist.all_to_all_single(recv, rows, back.tolist(), sizes, group=group)
        per_row = rows[0].numel() * rows.element_size() if len(rows) else 0
        return recv, back.tolist(), sum(c for i, c in enumerate(sizes) if i != me) * per_row

    x = tokens(rank)
    with torch.no_grad():
        scores = router(x).softmax(-1)
        # node-limited routing: the max_nodes nodes with the best expert, then the top k of theirs
        best = scores.view(T, nodes, E // nodes).amax(-1).topk(min(MOE["max_nodes"], nodes), dim=-1).indices
        allowed = torch.zeros(T, nodes, dtype=torch.bool).scatter(1, best, True).repeat_interleave(E // nodes, 1)
        weights, ids = scores.masked_fill(~allowed, -1.0).topk(k, dim=-1)
        dest = ids // per_gpu

        # plain all-to-all: one row per (token, expert), in the order of the GPU that holds the expert
        order = dest.flatten().argsort(stable=True)
        sizes = torch.bincount(dest.flatten(), minlength=world).tolist()
        recv, back, sent = a2a(x.repeat_interleave(k, 0)[order], sizes)
        experts_of, _, _ = a2a(ids.flatten()[order][:, None], sizes)  # metadata: which expert
        y = torch.stack([experts[int(e)](r) for r, e in zip(recv, experts_of[:, 0], strict=True)])
        combined, _, _ = a2a(y, back)
        out = torch.zeros(T * k, h).index_copy(0, order, combined).view(T, k, h)
        out = (out * weights[..., None]).sum(1)
        ref = sum(weights[:, j:j + 1] * torch.stack([experts[int(e)](x[t]) for t, e in enumerate(ids[:, j])])
                  for j in range(k))
        plain = dict(sent=sent, buffer=len(order) * h * x.element_size(),
                     equal=bool(torch.allclose(out, ref, atol=1e-5)))

        # hierarchical: across nodes once per target node (to the GPU of the same index), then inside
        node, index = rank // g, rank % g
        across = [dist.new_group([n * g + i for n in range(nodes)]) for i in range(g)]
        inside = [dist.new_group([n * g + i for i in range(g)]) for n in range(nodes)]
        own = [(rank, t, sorted({int(q) for q in dest[t]})) for t in range(T)]  # (source, token, target GPUs)
        first = [[item for item in own if n in {q // g for q in item[2]}] if n != node else [] for n in range(nodes)]
        rows = [x[t] for n in range(nodes) for _, t, _ in first[n]]
        sent_across, here, here_rows = 0, [], []
        if nodes > 1:
            recv, _, sent_across = a2a(torch.stack(rows) if rows else torch.empty(0, h), [len(b) for b in first],
                                       across[index])
            here = [item for bucket in _exchange_objects(first, across[index]) for item in bucket]
            here_rows = list(recv)
        second = [[] for _ in range(g)]
        pending = [(item, x[item[1]]) for item in own] + list(zip(here, here_rows, strict=True))
        for item, row in pending:
            for q in item[2]:
                if q // g == node and q != rank:
                    second[q % g].append((item, row))
        sent_inside, arrived = 0, []
        if g > 1:
            recv, _, sent_inside = a2a(torch.stack([r for b in second for _, r in b]) if any(second)
                                       else torch.empty(0, h), [len(b) for b in second], inside[node])
            meta = _exchange_objects([[item for item, _ in b] for b in second], inside[node])
            arrived = list(zip([item for b in meta for item in b], recv, strict=True))
        arrived += [(item, row) for item, row in zip(here, here_rows, strict=True) if rank in item[2]]
        arrived += [(item, x[item[1]]) for item in own if rank in item[2]]
        correct = all(torch.equal(row, tokens(src)[t]) for (src, t, _), row in arrived)
        delivered = sorted((src, t) for (src, t, _), _ in arrived)
    return dict(ids=ids.tolist(), plain=plain, across=sent_across, inside=sent_inside, delivered=delivered,
                rows_correct=correct)


def _exchange_objects(buckets: list[list[Any]], group: Any) -> list[list[Any]]:
    """Send ``buckets[i]`` to member ``i`` of ``group`` (the token ids that say which rows arrive:
    metadata, not counted)."""
    import torch.distributed as dist

    n = dist.get_world_size(group)
    gathered: list[Any] = [None] * n
    dist.all_gather_object(gathered, buckets, group=group)
    me = dist.get_group_rank(group, dist.get_rank())
    return [gathered[i][me] for i in range(n)]


#: Micro-batches per step of the ``zero`` check.
ZERO_MICROBATCHES = 2


#: Imported once by the forkserver, so that every worker it forks has them.
PRELOAD = ("torch", "torch.distributed.fsdp", "torch.distributed.tensor.parallel", "torch.distributed.tensor.debug",
           "torch.distributed.pipelining", "transformers", "transformers.models.llama.modeling_llama",
           "transformers.models.qwen2.modeling_qwen2")

class _Alive:
    """Counts, per (stage, micro-batch), the tensors autograd saved in that chunk's forward that are
    still alive (each is packed into a holder whose finaliser counts it out), and keeps the most
    chunks alive at once: the chunks whose activations a rank holds, whatever keeps them (the
    forward cache, or a weight-gradient step that has not run)."""

    def __init__(self) -> None:
        self.count: dict[tuple[int, int], int] = {}
        self.peak = 0

    def hooks(self, key: tuple[int, int]) -> Any:
        import weakref

        import torch

        class Holder:
            def __init__(self, t: Any) -> None:
                self.t = t

        def pack(t: Any) -> Any:
            holder = Holder(t)
            self.count[key] = self.count.get(key, 0) + 1
            weakref.finalize(holder, self._free, key)
            return holder

        return torch.autograd.graph.saved_tensors_hooks(pack, lambda holder: holder.t)

    def _free(self, key: tuple[int, int]) -> None:
        self.count[key] -= 1

    def update(self) -> None:
        self.peak = max(self.peak, sum(1 for c in self.count.values() if c > 0))


def _record(stage: Any, stages: list[Any], log: list[tuple[str, int, int]], peak: list[int],
            alive: _Alive | None = None) -> None:
    """Wrap ``stage``'s forward and backward of one chunk: log each, and keep in ``peak`` the most
    micro-batches whose activations the rank's stages hold (``fwd_cache``) after a forward, and in
    ``alive`` the most chunks whose saved tensors are alive."""
    forward, backward, k = stage.forward_one_chunk, stage.backward_one_chunk, stage.stage_index
    weight = stage.backward_weight_one_chunk

    def forward_one_chunk(mb, *args, **kwargs):  # noqa: ANN001, ANN202
        if alive is None:
            result = forward(mb, *args, **kwargs)
        else:
            with alive.hooks((k, mb)):
                result = forward(mb, *args, **kwargs)
            alive.update()
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


CHECKS = ("fsdp", "tp_hf", "tp_megatron", "block", "block_sp", "pipeline", "zero", "zero_redundancy", "ring", "cp",
          "moe")


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
                   "zero": lambda: _check_zero(rank, world),
                   "zero_redundancy": lambda: _check_zero_redundancy(rank, world),
                   "ring": lambda: _check_ring(rank, world), "cp": lambda: _check_cp(rank, world),
                   "moe": lambda: _check_moe(rank, world)}
        seconds = {}
        for name in checks:
            start = time.perf_counter()
            out[name] = runners[name]()
            dist.barrier()
            seconds[name] = time.perf_counter() - start
        out["seconds"] = seconds
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
