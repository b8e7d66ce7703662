from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Any

import pytest
from gymnasium.utils.env_checker import check_env

import agentrl_envs
from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.sandboxes.pool import SandboxPool
from agentrl_envs.tasks.os.env import OSEnv
from tests.agentrl_envs.sandboxes.conftest import TEST_LIMITS


def call(name: str, **arguments: Any) -> dict[str, Any]:
    raw = json.dumps(arguments)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "function": {"name": name, "arguments": raw}}],
    }


@pytest.fixture
def env() -> OSEnv:
    """The task as it runs by default: bwrap behind the env's own warm pool."""
    env = OSEnv(split="test", limits=TEST_LIMITS)
    yield env
    env.close()


def test_registered() -> None:
    spec = agentrl_envs.TASKS["os"]
    assert spec.entry_point == "agentrl_envs.tasks.os.env:OSEnv"
    assert spec.oracle == "agentrl_envs.tasks.os.oracle:OSOracle"


def test_reset_gives_upstream_messages(env: OSEnv) -> None:
    messages, info = env.reset(options={"index": 0})
    assert messages[0]["role"] == "system" and "Linux (Ubuntu) operating system" in messages[0]["content"]
    assert messages[1]["content"].startswith("Now, I will start a new problem in a new OS. My problem is:\n\n")
    assert [t["function"]["name"] for t in info["tools"]] == ["bash_action", "finish_action", "answer_action"]
    assert info["backend"] == "bwrap" and info["status"] == "running"


def test_bash_output_cleaned_truncated_and_empty(env: OSEnv) -> None:
    env.reset(options={"index": 0})
    out, *_ = env.step(call("bash_action", script="printf '\\033[31mred\\033[0m\\n'"))
    assert out[0]["content"] == "The output of the OS:\n\nred\n"
    out, *_ = env.step(call("bash_action", script="seq 1000"))
    assert out[0]["content"].endswith("\n[truncated because the output is too long]")
    assert len(out[0]["content"]) == len("The output of the OS:\n\n") + 780 + len(
        "\n[truncated because the output is too long]"
    )
    out, *_ = env.step(call("bash_action", script="true"))
    assert out[0]["content"] == "The output of the OS is empty."
    out, *_ = env.step(call("bash_action", script="printf '\\377\\376'"))
    assert out[0]["content"] == "The output of the OS:\n\nOS Environment output cannot be decoded as UTF-8"


def test_bad_calls_are_answered_not_raised(env: OSEnv) -> None:
    env.reset(options={"index": 0})
    out, _, term, _, _ = env.step({"role": "assistant", "content": "hello"})
    assert out == [{"role": "user", "content": "No executable tool calls found. Please call a tool instead"}]
    out, *_ = env.step(call("rm_rf"))
    assert out[0]["content"] == "Invalid function call. Please call a tool instead"
    bad_json = {
        "role": "assistant",
        "tool_calls": [{"id": "c2", "function": {"name": "bash_action", "arguments": "{"}}],
    }
    out, *_ = env.step(bad_json)
    assert out[0]["content"].startswith("Expecting property name enclosed in double quotes")
    out, *_ = env.step(call("bash_action", command="ls"))
    assert "Invalid arguments for 'bash_action'" in out[0]["content"]
    assert not term and env.status == "running"


def test_only_first_call_runs(env: OSEnv) -> None:
    env.reset(options={"index": 0})
    two = call("bash_action", script="echo one")
    two["tool_calls"].append({"id": "c2", "function": {"name": "bash_action", "arguments": '{"script": "echo two"}'}})
    out, *_ = env.step(two)
    assert out[0] == {"role": "tool", "tool_call_id": "c1", "content": "The output of the OS:\n\none\n"}
    assert out[1]["tool_call_id"] == "c2" and "ignored" in out[1]["content"]


def test_answer_graded_by_check_chain(env: OSEnv) -> None:
    env.reset(options={"index": 0})
    _, reward, terminated, _, info = env.step(call("answer_action", answer="0"))
    assert terminated and info["status"] == "completed" and reward == 0.0
    env.reset(options={"index": 0})
    out, *_ = env.step(call("bash_action", script='grep "Alice | Sell" /usr/stock.log | wc -l'))
    answer = out[0]["content"].split("\n\n", 1)[1].strip()
    _, reward, *_ = env.step(call("answer_action", answer=answer))
    assert reward == 1.0


def test_round_limit(env: OSEnv) -> None:
    env.reset(options={"index": 0})
    for _ in range(7):
        env.step(call("bash_action", script="true"))
    _, _, terminated, truncated, info = env.step(call("bash_action", script="true"))
    assert truncated and not terminated and info["status"] == "task limit reached"


def test_killed_shell_is_an_infra_error(backend: SandboxBackend) -> None:
    env = OSEnv(split="test", backend=backend)
    try:
        env.reset(options={"index": 0})
        os.kill(env.sandbox.shell_pid, signal.SIGKILL)
        # a shell already gone when the agent's script is sent is the sandbox's fault; one that ends while the
        # script runs is the script's (below), so wait until the kill has landed
        deadline = time.monotonic() + 10
        while env.sandbox.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        _, reward, _, truncated, info = env.step(call("bash_action", script="echo hi"))
        assert truncated and reward == 0.0
        assert info["status"] == "task error" and info["infra_error"] is True
    finally:
        env.close()


def test_episodes_lease_warm_sandboxes_and_never_share_one(env: OSEnv) -> None:
    assert isinstance(env.sandboxes, SandboxPool)
    shells = []
    for _ in range(3):
        env.reset(options={"index": 0})
        assert env.sandbox is not None
        shells.append(env.sandbox.shell_pid)
        env.step(call("bash_action", script="touch /root/dirty-from-an-earlier-episode"))
        env.step(call("answer_action", answer="0"))
    env.reset(options={"index": 0})
    assert env.sandbox is not None and env.sandbox.shell_pid not in shells and len(set(shells)) == 3
    assert env.sandbox.exec(["test", "-e", "/root/dirty-from-an-earlier-episode"]).exit_code == 1
    assert env.sample is not None
    stats = env.sandboxes.stats()[env.sample.image]
    assert stats.leases == 4 and stats.leased == 1


@pytest.mark.parametrize(
    "script",
    ["exit", "exit 3", "\x04", "exec true", "kill -9 $$", "trap '' INT; while :; do :; done"],
    ids=["exit", "exit 3", "ctrl-d", "exec", "kill -9 $$", "uninterruptible builtin loop"],
)
def test_a_script_that_ends_the_shell_is_the_agents_failure(backend: SandboxBackend, script: str) -> None:
    """Model output that ends (or wedges) the shell used to be an infra error: a way to escape every penalty."""
    env = OSEnv(split="test", backend=backend)
    try:
        env.reset(options={"index": 0})
        out, reward, terminated, truncated, info = env.step(call("bash_action", script=script))
        assert (reward, terminated, truncated) == (0.0, True, False)
        assert info["status"] == "agent invalid action" and info["infra_error"] is False
        assert out[0]["role"] == "tool" and out[0]["content"].startswith("The shell exited or stopped answering")
        env.reset(options={"index": 0})  # the next episode has a fresh shell
        out, _, _, _, info = env.step(call("bash_action", script="echo fresh"))
        assert out and out[0]["content"] == "The output of the OS:\n\nfresh\n", info
    finally:
        env.close()


def test_check_env(bwrap_backend: SandboxBackend) -> None:
    env = OSEnv(split="dev", backend=bwrap_backend)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_an_init_script_killed_before_it_finished_is_an_infra_error(backend: SandboxBackend, tmp_path) -> None:
    # The OOM killer or a stray SIGKILL leaves the task half set up: grading it would reward another task
    # (here, with the file never written, an empty answer would be "right"). The episode is not started.
    write_then_die = "mkdir -p /root/x && kill -9 $$; echo HOST=h > /root/x/app.env"
    sample = {
        "description": "What is HOST in /root/x/app.env?",
        "create": {"init": {"code": write_then_die}},
        "evaluation": {"check": [None, {"language": "python", "code": "import sys; sys.exit(0)"}],
                       "example": {"code": "cut -d= -f2 /root/x/app.env"}},
    }  # fmt: skip
    train = tmp_path / "os.json"
    train.write_text(json.dumps([sample, {**sample, "create": {"init": {"code": "exit 3"}}}]))
    env = OSEnv(split="train", train_file=train, backend=backend)
    try:
        killed_itself = (
            "init script 1 was killed .* not by the sandbox's memory limit.*the sandbox's shell still runs "
            r"\(in each of 2 fresh sandboxes\)"
        )
        with pytest.raises(agentrl_envs.InfraError, match=killed_itself):
            env.reset(options={"index": 0})
        assert env.sandbox is None  # given back, not left to the next episode
        env.reset(options={"index": 1})  # an init script's own failure is still the task's business (upstream)
        assert env.sandbox is not None
    finally:
        env.close()


def test_an_init_script_killed_from_outside_once_gets_a_fresh_sandbox(backend: SandboxBackend, tmp_path) -> None:
    # A stray SIGKILL from the host (seen about once in 2,000 resets) costs a sandbox, not the episode.
    marker = f"{os.getpid()}{time.monotonic_ns() % 1000:03d}"  # digits: sleep reads 1.<marker> as seconds
    sample = {
        "description": "What is HOST in /root/x/app.env?",
        "create": {"init": {"code": f"mkdir -p /root/x && sleep 1.{marker} ; echo HOST=h > /root/x/app.env"}},
        "evaluation": {"match": "h"},
    }
    train = tmp_path / "os.json"
    train.write_text(json.dumps([sample]))
    killed: list[int] = []

    def kill_the_first_sleep() -> None:
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for pid in os.listdir("/proc"):
                try:
                    cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                if cmdline[:2] == [b"sleep", f"1.{marker}".encode()]:
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
                    return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_first_sleep)
    killer.start()
    env = OSEnv(split="train", train_file=train, backend=backend)
    try:
        env.reset(options={"index": 0})
        killer.join()
        assert len(killed) == 1
        assert env.sandbox is not None and env.sandbox.exec(["cat", "/root/x/app.env"]).stdout == b"HOST=h\n"
        _, reward, terminated, _, info = env.step(call("answer_action", answer="h"))
        assert (reward, terminated, info["infra_error"]) == (1.0, True, False)  # the second sandbox was set up whole
    finally:
        killer.join()
        env.close()


def test_an_init_script_killed_by_the_memory_limit_says_so(backend: SandboxBackend, tmp_path) -> None:
    # `tail` holds a line without a newline in memory: 600 MiB of zeros is past the tests' 256 MiB limit.
    sample = {
        "description": "Nothing.",
        "create": {"init": {"code": "head -c 600M /dev/zero | tail"}},
        "evaluation": {"check": [None, {"language": "python", "code": "import sys; sys.exit(0)"}]},
    }
    train = tmp_path / "os.json"
    train.write_text(json.dumps([sample]))
    env = OSEnv(split="train", train_file=train, backend=backend)
    try:
        with pytest.raises(agentrl_envs.InfraError, match=r"by the OOM killer: the sandbox's memory limit of 256 MiB"):
            env.reset(options={"index": 0})
    finally:
        env.close()
