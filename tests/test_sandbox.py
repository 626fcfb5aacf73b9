"""The sandbox and the zygote: what a student's kernel can see, keep and leave behind."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat import v4
from nbgrader import utils

from autograder.course import KERNEL_START_TIMEOUT, REPO, Course
from autograder.kernel.server import _Server
from autograder.pipeline.autograde import forked_kernels
from autograder.preprocessors.execute import NOT_RUN, SandboxedExecute
from autograder.sandbox.bwrap import bwrap_arguments, course_sandbox, detect_sandbox, gpu_nodes
from autograder.sandbox.limits import Limits
from autograder.sandbox.zygote import Zygote
from autograder.submission import ERROR, KEY, TIMEOUT, outcome


def test_bwrap_arguments_hide_private_paths_and_open_mount_points(tmp_path):
    package = tmp_path / "pkg"
    (package / "fixtures").mkdir(parents=True)
    (package / "secret.db").write_text("")
    writable = tmp_path / "run"
    arguments = bwrap_arguments(
        writable, packages=[package], hidden=[package / "fixtures", package / "secret.db"]
    )
    pairs = list(itertools.pairwise(arguments))
    assert ("--ro-bind", str(package)) in pairs
    assert ("--tmpfs", str(package / "fixtures")) in pairs
    assert ("--ro-bind", os.devnull) in pairs  # files are covered by /dev/null
    assert ("--bind", str(writable.resolve())) in pairs
    assert "--unshare-net" in arguments and "--unshare-pid" in arguments
    # Mount points bubblewrap creates are opened to the kernels' uid.
    assert ("--dir", str(tmp_path.resolve())) in pairs


def test_a_sandbox_turned_off_says_so():
    sandbox = detect_sandbox(enabled=False)
    assert not sandbox.enabled
    assert sandbox.describe().startswith("off (turned off with --no-sandbox)")
    assert sandbox.wrap(["true"], Path("/tmp")) == ["true"]


def test_without_bubblewrap_the_sandbox_is_off_and_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr("autograder.sandbox.bwrap.shutil.which", lambda name: None)
    sandbox = detect_sandbox()
    assert not sandbox.enabled
    assert "apt install bubblewrap" in sandbox.describe()
    assert "student code ran with the grader's file access" in sandbox.describe()


def test_kernels_share_the_graders_uid_where_it_cannot_switch_uids(monkeypatch):
    # Root in a container that maps only some uids cannot become the students' uids.
    monkeypatch.setattr("autograder.sandbox.bwrap._can_switch_to_student_uids", lambda: False)
    sandbox = detect_sandbox()
    assert not sandbox.separate_uids
    assert "kernels share the grader's uid" in sandbox.describe()


SANDBOX = course_sandbox(Course.repository())


def torch_cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


needs_bwrap = pytest.mark.skipif(not SANDBOX.enabled, reason=f"sandbox off: {SANDBOX.reason}")


@needs_bwrap
def test_folders_under_tmp_stay_visible_inside_the_private_tmp(tmp_path):
    # CI may clone the course, and so its virtual environment, under /tmp: the
    # sandbox's private /tmp must not cover the folders mounted into it.
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "module.py").write_text("VALUE = 42\n")
    (tmp_path / "elsewhere.txt").write_text("")
    writable = tmp_path / "run"
    writable.mkdir()
    sandbox = detect_sandbox(packages=[package])
    probe = "import os, sys; print(os.listdir(sys.argv[1]), os.path.exists(sys.argv[2]))"
    command = [sys.executable, "-c", probe, str(package), str(tmp_path / "elsewhere.txt")]
    result = subprocess.run(
        sandbox.wrap(command, writable), capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "['module.py'] False", result.stderr


@needs_bwrap
def test_a_course_under_a_non_ascii_path_keeps_its_mounts_when_tmp_is_emptied(tmp_path):
    # Between two students the zygote empties the sandbox's /tmp, except what is mounted
    # there. A course cloned under /tmp/josé café must be recognised as mounted: reading
    # the mount table by hand decoded it as /tmp/josÃ© café, and emptied the writable
    # folder (the zygote's log, the kernels' folders) as if a student had left it.
    course = tmp_path / "josé café"
    package, writable = course / "pkg", course / "run"
    package.mkdir(parents=True)
    writable.mkdir()
    (package / "module.py").write_text("VALUE = 42\n")
    (writable / "zygote.log").write_text("kept\n")
    sandbox = detect_sandbox(packages=[*SANDBOX.packages, package])
    probe = """
import sys
from pathlib import Path
from autograder.kernel.server import _empty_scratch_dirs, _mount_points
package, writable = Path(sys.argv[1]), Path(sys.argv[2])
Path("/tmp/left-by-a-student").write_text("x")
print(package in _mount_points(), writable in _mount_points())
_empty_scratch_dirs(keep=writable / "k0001")
print(sorted(p.name for p in writable.iterdir()), Path("/tmp/left-by-a-student").exists())
"""
    command = [sys.executable, "-c", probe, str(package), str(writable)]
    result = subprocess.run(
        sandbox.wrap(command, writable), capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split("\n")[:2] == ["True True", "['work', 'zygote.log'] False"], (
        result.stdout + result.stderr
    )


@needs_bwrap
def test_the_sandbox_hides_the_course_the_pipeline_and_the_network(built_course: Course, tmp_path):
    sandbox = course_sandbox(built_course)
    probe = """
import os, socket, sys
from pathlib import Path
root, repo = Path(sys.argv[1]), Path(sys.argv[2])
print("gradebook", (root / "gradebook.db").exists())
print("source", (root / "build" / "source").exists())
print("solutions", (repo / "solutions").exists())
print("fixtures", (repo / "autograder" / "fixtures").exists())
print("pipeline", (repo / "autograder" / "pipeline").exists())
print("kernel", (repo / "autograder" / "kernel" / "server.py").exists())
print("src", (repo / "src" / "autograd_pitfalls" / "checks.py").exists())
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("network True")
except OSError:
    print("network False")
try:
    (repo / "autograder" / "kernel" / "written").write_text("x")
    print("write True")
except OSError:
    print("write False")
"""
    writable = tmp_path / "run"
    writable.mkdir()
    command = [sys.executable, "-c", probe, str(built_course.root), str(REPO)]
    result = subprocess.run(
        sandbox.wrap(command, writable), capture_output=True, text=True, timeout=60
    )
    seen = dict(line.split() for line in result.stdout.splitlines())
    assert seen == {
        "gradebook": "False",
        "source": "False",
        "solutions": "False",
        "fixtures": "False",
        "pipeline": "False",
        "kernel": "True",
        "src": "True",
        "network": "False",
        "write": "False",
    }, result.stderr


def test_a_kernel_given_the_pid_of_an_earlier_child_is_not_taken_for_dead(monkeypatch, tmp_path):
    # pids wrap (at 32768 on many hosts): a new kernel can get the pid of a child that
    # exited long before. Here a live process stands in for the kernel fork returns.
    server = _Server(own_pid_namespace=False)
    kernel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        server.exit_codes[kernel.pid] = 1  # an earlier child with this pid exited with 1
        monkeypatch.setattr(os, "fork", lambda: kernel.pid)
        server.spawn({"cwd": str(tmp_path / "work")}, ())
        assert server.poll(kernel.pid) is None
    finally:
        kernel.kill()
        kernel.wait()


@contextlib.contextmanager
def _forking(kind: str, limits: Limits):
    """A zygote that kernels fork from, in bubblewrap or without a sandbox."""
    sandbox = SANDBOX if kind == "bubblewrap" else detect_sandbox(enabled=False)
    if kind == "bubblewrap" and not SANDBOX.enabled:
        pytest.skip(f"sandbox off: {SANDBOX.reason}")
    with (
        tempfile.TemporaryDirectory(prefix="autograder-test-") as run,
        Zygote(sandbox, Path(run), limits) as kernels,
        forked_kernels(kernels),
    ):
        yield kernels


@pytest.fixture(scope="module", params=["bubblewrap", "no sandbox"])
def zygote(request):
    with _forking(request.param, Limits(cell_timeout=30)) as kernels:
        yield kernels


def _execute(notebook: nbformat.NotebookNode, **options) -> None:
    """Runs ``notebook`` in a new kernel (forked from the zygote in use), errors allowed.

    A kernel may take minutes to start on a machine busy with other grading runs.
    """
    NotebookClient(
        notebook,
        timeout=120,
        startup_timeout=KERNEL_START_TIMEOUT,
        allow_errors=True,
        kernel_name="python3",
        **options,
    ).execute()


def _run(*sources: str) -> list[str]:
    """Runs the cells in a fresh forked kernel; returns each cell's stdout or error."""
    notebook = v4.new_notebook(cells=[v4.new_code_cell(source) for source in sources])
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    _execute(notebook)
    results = []
    for cell in notebook.cells:
        text = ""
        for output in cell.outputs:
            if output.output_type == "stream":
                text += output.text
            elif output.output_type == "error":
                text += f"{output.ename}: {output.evalue}"
        results.append(text.strip())
    return results


@pytest.mark.slow
def test_each_kernel_starts_without_what_the_previous_one_did(zygote):
    in_tmp = f"/tmp/autograder-test-{uuid.uuid4().hex}"
    first = _run(
        "import contextlib, os, torch\ntorch.leaked = 1\nopen('left.txt', 'w').write('x')\n"
        # /tmp may not even be writable to the student's uid.
        f"with contextlib.suppress(OSError):\n    open('{in_tmp}', 'w').write('x')\n"
        "print(os.getuid(), os.getcwd())"
    )
    second = _run(
        "import os, torch\n"
        "print(hasattr(torch, 'leaked'), os.path.exists('left.txt'), os.getuid(), os.getcwd(),"
        f" os.path.exists('{in_tmp}'))"
    )
    uid_first, cwd_first = first[0].split()
    leaked, left, uid_second, cwd_second, left_in_tmp = second[0].split()
    assert (leaked, left) == ("False", "False")
    if zygote.sandbox.enabled:
        # The sandbox's private /tmp is emptied between students.
        assert left_in_tmp == "False"
    else:
        # Without the sandbox /tmp is the machine's: docs/sandbox.md says so.
        Path(in_tmp).unlink(missing_ok=True)
    assert cwd_first != cwd_second
    if zygote.sandbox.separate_uids:
        assert uid_first != uid_second and int(uid_first) > 0


@pytest.mark.slow
def test_nothing_a_kernel_started_outlives_it(zygote):
    marker = f"autograder-test-{uuid.uuid4().hex}"
    started = _run(
        "import subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'],"
        " start_new_session=True)\nprint(p.pid)"
    )
    assert started[0].isdigit()
    alive = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and entry.isdigit() and int(entry) != os.getpid():
            alive.append(entry)
    assert alive == []


_ADD_KEYS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for ring in (-4, -3, -5):  # the user, session and user session keyrings
    libc.syscall(248, b"user", b"autograder-test-key", b"secret", 6, ctypes.c_long(ring))
print(os.getuid())
"""


def _keys_of(uid: int) -> list[int]:
    """Keys named autograder-test-key that ``uid`` can find in its keyrings."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            libc = ctypes.CDLL(None, use_errno=True)
            found = [
                libc.syscall(250, 10, ctypes.c_long(ring), b"user", b"autograder-test-key", 0)
                for ring in (-4, -3, -5)
            ]
            os.write(write, repr([key for key in found if key > 0]).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as answer:
        return eval(answer.read())  # a list of ints written just above


@pytest.mark.slow
def test_no_key_of_a_student_survives_its_kernel(zygote):
    if not zygote.sandbox.separate_uids:
        pytest.skip("without a uid per student the keyrings are the grader's")
    if os.uname().machine != "x86_64":
        pytest.skip("the syscall numbers above are x86_64's")
    (uid,) = _run(_ADD_KEYS)
    assert uid.isdigit(), uid
    # The uid's user keyring outlives its processes; the grader clears it at reap.
    assert _keys_of(int(uid)) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bubblewrap", "no sandbox"])
def test_each_kernel_uses_the_torch_threads_its_limits_give(kind):
    # torch's default is one thread per core (never more, whatever OMP_NUM_THREADS says).
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: one thread is torch's default here, the test would show nothing")
    with _forking(kind, Limits(cell_timeout=30, torch_threads=1)):
        assert _run("import torch\nprint(torch.get_num_threads())") == ["1"]


def test_kernels_graded_at_once_share_the_cores_unless_told(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert Limits().sharing(1).torch_threads == 4
    assert Limits().sharing(2).torch_threads == 2
    assert Limits().sharing(3).torch_threads == 1
    assert Limits().sharing(8).torch_threads == 1
    assert Limits(torch_threads=3).sharing(2).torch_threads == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the grader's own setting wins
    assert Limits().sharing(1).torch_threads == 2


@pytest.mark.slow
def test_the_memory_limit_stops_a_20_gb_allocation(zygote):
    result = _run("import torch\nx = torch.ones(5 * 2**30)", "print('still here')")
    assert "can't allocate memory" in result[0]
    assert result[1] == "still here"


@pytest.mark.slow
def test_a_forked_kernel_runs_a_student_notebook_like_a_fresh_one(zygote, built_course: Course):
    path = built_course.source / "01a_leaf_tensors" / "01a_leaf_tensors.ipynb"
    notebook = nbformat.read(path, as_version=4)
    _execute(notebook)
    errors = [
        output.ename
        for cell in notebook.cells
        if cell.cell_type == "code" and "raises-exception" not in cell.metadata.get("tags", [])
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert errors == []


class _SlowOutput(SandboxedExecute):
    """Reads a test cell's output only a second after the cell began: a slow IOPub."""

    async def _async_poll_output_msg(self, parent_msg_id, cell, cell_index):
        if utils.is_grade(cell):
            await asyncio.sleep(1)
        return await super()._async_poll_output_msg(parent_msg_id, cell, cell_index)


@pytest.mark.slow
def test_output_that_does_not_arrive_is_reported_as_such_and_fails_its_test(zygote):
    # Three display messages far over the output limit, held back a second on their way
    # (as 700 MB ones are), and an IOPub wait of 0 s: the cell's reply always comes first.
    # Without the delay, whether small messages beat the reply is a race.
    source = (
        "from IPython.display import display\n\nfor _ in range(3):\n"
        "    display({'text/plain': 'x' * 200_000}, raw=True)\nassert False, 'a wrong answer'"
    )
    cell = v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "q1-tests",
        "locked": True,
        "points": 1,
        "solution": False,
        "schema_version": 3,
    }
    notebook = v4.new_notebook(cells=[v4.new_code_cell("print('an answer cell')"), cell])
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    executor = _SlowOutput(timeout=30, iopub_timeout=0, max_output_chars=1000)
    notebook, _ = executor.preprocess(notebook, {"metadata": {"path": str(REPO)}})
    recorded = notebook.metadata[KEY]
    _, message = outcome(notebook)
    assert TIMEOUT not in recorded and "ran past" not in message, message
    # (A kernel started outside nbgrader's configuration also reports its sys.stdout.)
    (lost,) = [entry for entry in recorded[ERROR] if entry.startswith("q1's test")]
    assert "did not all arrive" in lost and "1,000 kept per cell" in lost
    assert lost.endswith("that test fails")
    assert NOT_RUN in [output.get("ename") for output in notebook.cells[1].outputs]


@pytest.mark.slow
def test_grading_kernels_run_the_tests_on_the_cpu(zygote):
    # Grades must not depend on whether the grader's machine has a GPU.
    seen = _run(
        "import os\nfrom autograd_pitfalls import devices\n"
        "print(repr(os.environ['CUDA_VISIBLE_DEVICES']), devices())"
    )
    assert seen == ["'' [device(type='cpu')]"]


@pytest.mark.slow
def test_a_student_cannot_write_more_than_the_disk_limit(tmp_path):
    if not SANDBOX.enabled:
        pytest.skip(f"sandbox off: {SANDBOX.reason}")
    write = (
        "import os\nwritten = 0\ntry:\n"
        "    for n in range(8):\n"
        "        with open(os.path.join({folder!r}, f'f{{n}}'), 'wb') as handle:\n"
        "            handle.write(b'x' * 20 * 2**20)\n"
        "        written += 20\n"
        "except OSError as error:\n"
        "    print(written, error.strerror)\n"
    )
    limits = Limits(cell_timeout=30, disk_mb=50)
    with (
        Zygote(SANDBOX, tmp_path / "run", limits) as kernels,
        forked_kernels(kernels),
    ):
        here, in_tmp, in_shm = _run(
            write.format(folder="."), write.format(folder="/tmp"), write.format(folder="/dev/shm")
        )
        host_files = [path for path in (tmp_path / "run").rglob("f*") if path.is_file()]
    assert here == "40 No space left on device"  # 2 files of 20 MB fit in 50 MB
    for seen in (in_tmp, in_shm):
        # The student's own uid may not write there at all; the grader's may, up to the limit.
        assert seen in ("40 No space left on device", "0 Permission denied"), seen
    assert host_files == []  # the student's folder never reached the host's disk


@pytest.mark.slow
def test_a_tree_deeper_than_python_recursion_is_removed_after_the_student(zygote, tmp_path):
    # shutil.rmtree on Python 3.11 raises RecursionError on such a tree; the batch goes on.
    made = _run(
        "import os\nfd = os.open('.', os.O_RDONLY)\n"
        "for _ in range(3000):\n"
        "    os.mkdir('d', dir_fd=fd)\n"
        "    child = os.open('d', os.O_RDONLY, dir_fd=fd)\n"
        "    os.close(fd)\n    fd = child\n"
        "print('deep', os.getcwd())"
    )
    label, folder = made[0].split()
    assert label == "deep"
    after = _run("print('next student')")
    assert after == ["next student"]
    assert not Path(folder).exists()  # gone on the host (without the sandbox it was there)


@pytest.mark.slow
def test_two_zygotes_at_once_give_their_students_different_uids(tmp_path):
    if not SANDBOX.separate_uids:
        pytest.skip("kernels share the grader's uid here")
    uids = []
    for run in ("a", "b"):
        kernels = Zygote(SANDBOX, tmp_path / run, Limits(cell_timeout=30))
        uids.append(kernels)
    try:
        blocks = {kernels.uid_block for kernels in uids}
        assert len(blocks) == 2 and None not in blocks
    finally:
        for kernels in uids:
            kernels.close()


@pytest.mark.slow
def test_the_assignments_data_files_reach_the_kernels_folder(zygote, tmp_path):
    # nbgrader runs the notebook in its autograded folder, beside the assignment's files.
    folder = tmp_path / "autograded"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "points.csv").write_text("1,2\n")
    notebook = v4.new_notebook(cells=[v4.new_code_cell("print(open('data/points.csv').read())")])
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    _execute(notebook, resources={"metadata": {"path": str(folder)}})
    assert notebook.cells[0].outputs[0].text.strip() == "1,2"


@pytest.fixture(scope="module", params=["bubblewrap", "no sandbox"])
def cuda_zygote(request):
    """A zygote whose kernels grade with --device cuda (visible GPU, RLIMIT_DATA cap)."""
    with _forking(request.param, Limits(cell_timeout=30, device="cuda")) as kernels:
        yield kernels


@pytest.mark.slow
def test_grading_on_cuda_caps_host_memory_without_an_address_space_cap(cuda_zygote):
    seen = _run(
        "import os, resource\n"
        "print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')),"
        " resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY,"
        " resource.getrlimit(resource.RLIMIT_DATA)[0] != resource.RLIM_INFINITY)",
        "import torch\nx = torch.ones(5 * 2**30)  # 20 GiB on the host",
        "print('still here')",
    )
    # The GPU stays visible (CUDA needs the address space it reserves), and the 20 GB a
    # student allocates on the host are refused all the same.
    assert seen[0] == "None True True"
    assert "can't allocate memory" in seen[1]
    assert seen[2] == "still here"


@pytest.mark.slow
@pytest.mark.skipif(not torch_cuda_available(), reason="no CUDA device here")
def test_grading_on_cuda_runs_the_tests_on_the_gpu(cuda_zygote):
    seen = _run(
        "import torch\nfrom autograd_pitfalls import devices\n"
        "x = torch.ones(1000, 1000, device='cuda')\n"
        "print([d.type for d in devices()], float((x @ x).sum()))"
    )
    assert seen == ["['cpu', 'cuda'] 1000000000.0"]


def test_gpu_device_files_are_found_and_bound_into_the_sandbox(tmp_path):
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "null"):
        (tmp_path / name).touch()
    (tmp_path / "nvidia-caps").mkdir()
    (tmp_path / "nvidia-caps" / "nvidia-cap1").touch()
    nodes = gpu_nodes(tmp_path)
    assert [path.relative_to(tmp_path).as_posix() for path in nodes] == [
        "nvidia-caps/nvidia-cap1",
        "nvidia-uvm",
        "nvidia-uvm-tools",
        "nvidia0",
        "nvidia1",
        "nvidiactl",
    ]
    arguments = bwrap_arguments(tmp_path / "run", gpu_nodes=nodes)
    pairs = list(itertools.pairwise(arguments))
    for node in nodes:
        assert ("--dev-bind", str(node)) in pairs
    assert "--dev-bind" not in bwrap_arguments(tmp_path / "run")


def test_an_unknown_device_is_refused():
    with pytest.raises(ValueError, match="device must be one of cpu, cuda"):
        Limits(device="tpu")


@pytest.mark.skipif(bool(gpu_nodes()), reason="this machine has a GPU")
def test_grading_on_cuda_without_a_gpu_says_so(capsys, tmp_path):
    from autograder.cli import main

    assert main(["grade", "01a_leaf_tensors", str(tmp_path), "--device", "cuda"]) == 1
    assert "this machine has no NVIDIA GPU" in capsys.readouterr().err


@pytest.mark.skipif(
    not Path("/proc/self/autogroup").exists(), reason="no sched_autogroup on this kernel"
)
def test_a_niced_process_keeps_its_priority_in_the_session_it_begins():
    # As a kernel does: setsid (a new scheduling group, at nice 0), then the helper.
    from autograder.kernel.server import keep_priority_in_new_session

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            niceness = os.nice(7)  # 7 more than the test's own (make test may run niced)
            os.setsid()
            before = Path("/proc/self/autogroup").read_text()
            keep_priority_in_new_session()
            after = Path("/proc/self/autogroup").read_text()
            os.write(write, f"{before.split()[-1]} {after.split()[-1]} {niceness}".encode())
        finally:
            os._exit(0)
    os.close(write)
    before, after, niceness = os.read(read, 100).decode().split()
    os.waitpid(pid, 0)
    # The new group started at nice 0; the helper gave it the process's own.
    assert (before, after) == ("0", niceness) and int(niceness) > 0


def test_the_kernel_client_retries_a_kernel_not_listening_yet_within_milliseconds(tmp_path):
    """A forked kernel binds its sockets after nbclient connects: ZeroMQ's default 100 ms
    retry was most of a kernel's start-up."""
    import zmq
    import zmq.asyncio
    from jupyter_client.connect import write_connection_file

    from autograder.sandbox.provisioner import RECONNECT_MAX_MS, RECONNECT_MS, ReadyClient

    connection = tmp_path / "kernel.json"
    write_connection_file(str(connection), transport="ipc", ip=str(tmp_path / "ipc"))
    context = zmq.asyncio.Context()
    client = ReadyClient(connection_file=str(connection), context=context)
    client.load_connection_file()
    # No heartbeat: its thread opens a socket of its own, which raced the context's
    # destruction below (a thread exception pytest reported as a warning).
    client.start_channels(hb=False)
    try:
        for channel in (client.shell_channel, client.iopub_channel, client.control_channel):
            assert channel.socket.getsockopt(zmq.RECONNECT_IVL) == RECONNECT_MS
            assert channel.socket.getsockopt(zmq.RECONNECT_IVL_MAX) == RECONNECT_MAX_MS
    finally:
        client.stop_channels()
        context.destroy(linger=0)
