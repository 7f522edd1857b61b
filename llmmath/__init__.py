"""llmmath: the formula sheet of the book *The mathematics of training large language models*.

Every formula of the book lives here exactly once; each chapter notebook explains and calls it.
One module per chapter topic; the chapter that derives a function is named in its docstring.
Every public name of every module is also available at the top level (``llmmath.param_count``).

==================  ===============================================================================
module              chapter
==================  ===============================================================================
``config``          models: :class:`TransformerConfig`, :func:`from_hf_config`
``presets``         published configurations (:func:`preset`)
``matmul``          the cost of a matrix multiply
``chain``           the matrix chain rule
``mlp``             forward and backward cost
``params``          parameter counts
``flops``           FLOPs of a transformer and training time
``hardware``        accelerators: peak FLOP/s, memory, links; the roofline
``memory``          weights, optimizer states, activations, KV cache
``inference``       serving: prefill, decode, latency, batching, tensor parallelism
``units``           bytes, GB and GiB
``optim``           optimizer update rules and their state
``scaling``         scaling laws and compute-optimal training
``parallel``        splitting a training step across GPUs: collectives, layouts, memory
``context_parallel`` context parallelism: causal load balance, the gathered keys and values
``moe_parallel``    expert parallelism: where a token's copies travel (node-limited, hierarchical)
``sharding``        ZeRO/FSDP padding, the FSDP x TP split, the memory a GPU keeps free
``steptime``        the time of a training step: the bound and the calibrated prediction
``calibration``     published measured runs and the step-time model's fitted constants
``planning``        planning a training run and its serving end to end (``plan``, ``serve``)
``errata``          the seeds' claims, rechecked
``check``           checking a reader's answers to the exercises (the machinery)
``exercises``       each chapter's checkable exercises, ``exercises/<slug>.py`` (registered by ``check``)
==================  ===============================================================================

Three modules serve the notebooks only and are not part of the top level: ``display`` (Markdown
tables, ``show_table``), ``plotting`` (``import llmmath.plotting`` sets PNG figures and the
book's style) and ``live`` (the live calculator of the calculator chapter, ipywidgets controls);
and ``grading`` serves the assignments' autograder (their tests and first cell).
The data the modules read lives in ``hf_configs/`` (published ``config.json`` files) and ``data/``
(the errata's claims, ``data/errata.json``; the published measured training runs,
``data/measured_runs.json``, and the step-time model's constants fitted to them,
``data/calibration.json``).

``llmmath.check`` is the function :func:`check`; the module is ``llmmath.check`` in
``sys.modules`` (``from llmmath.check import describe`` works as usual).
"""

from __future__ import annotations

from . import (
    calibration,
    chain,
    config,
    context_parallel,
    errata,
    flops,
    hardware,
    inference,
    matmul,
    memory,
    mlp,
    moe_parallel,
    optim,
    parallel,
    params,
    planning,
    presets,
    scaling,
    sharding,
    steptime,
    units,
)
from . import check as _check_module
from .calibration import *  # noqa: F403
from .chain import *  # noqa: F403
from .check import *  # noqa: F403
from .config import *  # noqa: F403
from .context_parallel import *  # noqa: F403
from .errata import *  # noqa: F403
from .flops import *  # noqa: F403
from .hardware import *  # noqa: F403
from .inference import *  # noqa: F403
from .matmul import *  # noqa: F403
from .memory import *  # noqa: F403
from .mlp import *  # noqa: F403
from .moe_parallel import *  # noqa: F403
from .optim import *  # noqa: F403
from .parallel import *  # noqa: F403
from .params import *  # noqa: F403
from .planning import *  # noqa: F403
from .presets import *  # noqa: F403
from .scaling import *  # noqa: F403
from .sharding import *  # noqa: F403
from .steptime import *  # noqa: F403
from .units import *  # noqa: F403

__version__ = "0.1.0"

#: The modules whose public names make up the top level, in the book's order.
MODULES = (
    config, presets, matmul, chain, mlp, params, flops, hardware, memory, inference, units, optim, scaling, parallel,
    context_parallel, moe_parallel, sharding, steptime, calibration, planning, errata,
    _check_module,
)

__all__ = [name for module in MODULES for name in module.__all__]
