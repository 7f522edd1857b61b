"""Notebook kernels for nbval, forked from a server that has imported the heavy modules once.

A chapter's kernel used to start Python, ipykernel, numpy, sympy and matplotlib (0.7 s of CPU)
and, in ten of the chapters, PyTorch and ``transformers`` (1 to 2.5 s more): about 30 s of the test
run's CPU went into the same imports, again and again. Here one server per test session (started by
``conftest.py`` when pytest runs nbval with ``--nbval-current-env``) imports them once
(:data:`PRELOAD`) and forks a kernel for each notebook; the kernel is then an ordinary ipykernel
(``IPKernelApp``) in a fresh process image, in the notebook's folder, with the environment nbval
gave it. What differs from a kernel started from scratch, and why it does not matter:

* the modules of :data:`PRELOAD` are in ``sys.modules`` before the first cell: importing them
  has no effect a notebook can see (none changes a global setting such as matplotlib's rcParams
  or NumPy's print options: ``llmmath.plotting``, which does, is not preloaded), and their
  import-time warnings are ignored in the server, so none is marked as already shown;
* ``random``'s, NumPy's and PyTorch's global generators are seeded again from the OS after the
  fork, as in a new process (a notebook seeds its own: its outputs are committed).

``kernel_fork.py kernel CONNECTION_FILE`` is the kernel command nbval starts (:func:`kernel_spec`):
a small stdlib-only process that asks the server for a kernel, passes it its own stdin, stdout and
stderr, forwards every signal it gets (nbval's interrupts, jupyter_client's terminate) and exits
with the kernel's status. If it dies, the server kills the kernel; if the server dies, so do its
kernels (ipykernel's parent poller). Without a server (``LLMMATH_KERNEL_SERVER`` unset, no
``fork``), it becomes an ordinary ``python -m ipykernel_launcher``. Set
``LLMMATH_FORK_KERNELS=0`` to start every kernel from scratch.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys

SERVER_ENV = "LLMMATH_KERNEL_SERVER"  # the server's socket, for the kernel command
# Imported by the server before it forks (what the chapters import, in the order they do): each
# is imported by several chapters; none changes a setting a notebook could see.
PRELOAD = (
    "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell",
    "numpy", "sympy", "matplotlib", "matplotlib.pyplot", "docutils", "myst_nb", "llmmath",
    "torch", "torch.utils.flop_counter", "transformers", "transformers.models.auto.modeling_auto",
    "transformers.models.llama.modeling_llama", "transformers.models.gpt2.modeling_gpt2",
)
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


# --------------------------------------------------------------------------- the kernel command
def kernel_spec() -> dict:
    """nbval's kernel spec for ``--nbval-current-env``, starting kernels through the server."""
    import ipykernel.kernelspec

    spec = ipykernel.kernelspec.get_kernel_dict()
    spec["argv"] = [sys.executable, "-I", "-S", os.path.abspath(__file__), "kernel", "{connection_file}"]
    return spec


def _recv_line(conn: socket.socket) -> dict | None:
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = conn.recv(4096)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def kernel_command(connection_file: str) -> int:
    """Ask the server for a kernel; relay signals to it; return its exit status."""
    path = os.environ.get(SERVER_ENV, "")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:  # no server: an ordinary kernel
        conn.close()
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file])
    request = json.dumps({"connection_file": connection_file, "cwd": os.getcwd(), "env": dict(os.environ)})
    conn.sendmsg([request.encode() + b"\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    reply = _recv_line(conn)
    if reply is None or "pid" not in reply:
        return 1
    pid = reply["pid"]

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in _SIGNALS:
        signal.signal(signum, forward)
    done = _recv_line(conn)  # the server writes the kernel's status when it has reaped it
    return 1 if done is None else int(done["status"])


# --------------------------------------------------------------------------- the server
def start_server():
    """Start a server for this session (its socket's path in ``$LLMMATH_KERNEL_SERVER``)."""
    import subprocess
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="llmmath-kernels-"), "socket")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", path], stdin=subprocess.PIPE)
    os.environ[SERVER_ENV] = path
    return proc


def stop_server(proc) -> None:
    """End the server (and any kernel still running); remove its socket."""
    import shutil

    proc.stdin.close()
    proc.wait()
    shutil.rmtree(os.path.dirname(os.environ.pop(SERVER_ENV)), ignore_errors=True)


def use_in_nbval() -> None:
    """Make nbval's ``--nbval-current-env`` kernel the forked one (:func:`kernel_spec`)."""
    import nbval.kernel

    get_spec = nbval.kernel.NbvalKernelspecManager.get_kernel_spec

    def get_kernel_spec(self, kernel_name):
        if kernel_name != nbval.kernel.CURRENT_ENV_KERNEL_NAME:
            return get_spec(self, kernel_name)
        return self.kernel_spec_class(resource_dir=nbval.kernel.ipykernel.kernelspec.RESOURCES, **kernel_spec())

    nbval.kernel.NbvalKernelspecManager.get_kernel_spec = get_kernel_spec


def serve(path: str) -> int:
    """Listen on ``path``; fork a kernel per request; exit (killing the kernels) when stdin closes."""
    import selectors
    import warnings

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the session's Ctrl-C is pytest's; stdin tells us to go
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    with warnings.catch_warnings():  # ignored, so not recorded as shown: a kernel would show them
        warnings.simplefilter("ignore")
        for name in PRELOAD:
            try:
                __import__(name)
            except ImportError:
                pass
    _log_cpu({"kernel server": "preload", "cpu": _own_cpu()})
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
    kernels: dict[int, socket.socket] = {}  # pid -> the connection of its kernel command
    files: dict[int, str] = {}  # pid -> its connection file (names the kernel in the CPU log)
    while True:
        for key, _ in sel.select(timeout=0.1):
            if key.data == "accept":
                conn, _ = listener.accept()
                inherited = [fd for fd in (listener.fileno(), getattr(sel, "fileno", lambda: -1)(),
                                           *(c.fileno() for c in kernels.values())) if fd >= 0]
                pid, connection_file = _fork_kernel(conn, inherited)
                if pid:
                    kernels[pid], files[pid] = conn, connection_file
                    sel.register(conn, selectors.EVENT_READ, pid)
                else:
                    conn.close()
            elif key.data == "stdin":
                if not os.read(sys.stdin.fileno(), 4096):  # the session ended
                    for pid in kernels:
                        _kill(pid)
                    return 0
            else:  # a kernel command closed its connection (it exited, or was killed): so must the kernel
                if not key.fileobj.recv(4096):
                    sel.unregister(key.fileobj)
                    _kill(key.data)
        while kernels:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if not pid:
                break
            _log_cpu({"kernel": files.pop(pid, ""), "cpu": usage.ru_utime + usage.ru_stime})
            conn = kernels.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
                except OSError:
                    pass
                try:
                    sel.unregister(conn)
                except (KeyError, ValueError):
                    pass
                conn.close()


def _own_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _log_cpu(record: dict) -> None:
    """For benchmarks/cpu_plugin.py: the CPU seconds of the preload and of each kernel."""
    folder = os.environ.get("LLMMATH_CPU_LOG")
    if folder:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"kernels-{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _fork_kernel(conn: socket.socket, inherited: list[int]) -> tuple[int, str]:
    """Fork a kernel for the request on ``conn``; return its pid (0 if the request is broken) and
    its connection file.

    ``inherited``: the server's descriptors, closed in the kernel (the listening socket, the
    selector, the other kernels' connections).
    """
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        msg, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_LEN(3 * fds.itemsize))
        if not msg:
            return 0, ""
        data += msg
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    request = json.loads(data)
    server = os.getpid()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        return pid, request["connection_file"]
    # the kernel
    code = 1
    try:
        os.setsid()  # its own session, as jupyter_client starts kernels
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python process
        for fd in inherited:
            os.close(fd)
        conn.close()
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import random

        random.seed()
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        if "torch" in sys.modules:
            sys.modules["torch"].seed()
        import importlib.util

        from ipykernel import kernelapp

        # sys.argv and sys.path as `python -m ipykernel_launcher -f FILE` has them (the launcher
        # takes its own folder off sys.path; IPython puts '' back); the kernel exits if the server does
        sys.argv = [importlib.util.find_spec("ipykernel_launcher").origin, "-f", request["connection_file"]]
        del sys.path[0]
        kernelapp.IPKernelApp.launch_instance(parent_handle=server)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # noqa: BLE001 - report, then leave
        import traceback

        traceback.print_exc()
    finally:
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:2] == ["kernel"]:
        sys.exit(kernel_command(sys.argv[2]))
    if sys.argv[1:2] == ["serve"]:
        sys.exit(serve(sys.argv[2]))
    sys.exit(f"usage: {sys.argv[0]} serve SOCKET | kernel CONNECTION_FILE")
