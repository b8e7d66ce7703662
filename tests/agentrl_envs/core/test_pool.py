"""The env pool the evaluation runner, the trainer's producer and the controller's local worker share."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from agentrl_envs import EnvPool


class Env:
    """Counts its closes; ``fail_close`` makes close raise; remembers the thread that made it."""

    def __init__(self, *, fail_close: bool = False) -> None:
        self.closes = 0
        self.fail_close = fail_close
        self.made_on = threading.get_ident()

    def close(self) -> None:
        self.closes += 1
        if self.fail_close:
            raise OSError("the sandbox is already gone")


class Maker:
    """A ``make`` that keeps every env it made; ``gate`` (if set) holds each make until it is set."""

    def __init__(self, gate: threading.Event | None = None, **options: bool) -> None:
        self.made: list[Env] = []
        self.gate = gate
        self.options = options

    def __call__(self) -> Env:
        if self.gate is not None:
            assert self.gate.wait(5), "the test never opened the gate"
        env = Env(**self.options)
        self.made.append(env)
        return env


async def test_acquire_waits_at_the_size_and_a_release_lets_the_waiter_reuse_the_env() -> None:
    pool = EnvPool(Maker(), size=2)
    first, second = await pool.acquire(), await pool.acquire()
    waiting = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    pool.release(first)
    assert await asyncio.wait_for(waiting, 1) is first
    assert pool.created == 2 and second is not first
    await pool.aclose()


async def test_released_envs_are_reused_and_broken_ones_closed_and_replaced() -> None:
    maker = Maker()
    pool = EnvPool(maker, size=4)
    env = await pool.acquire()
    pool.release(env)
    assert await pool.acquire() is env and len(maker.made) == 1
    pool.release(env, broken=True)
    assert env.closes == 1 and pool.created == 0
    fresh = await pool.acquire()
    assert fresh is not env and len(maker.made) == 2
    await pool.arelease(fresh, broken=True)  # closed in a thread, the slot given back
    assert fresh.closes == 1 and pool.created == 0 and (await pool.acquire()) is maker.made[2]
    await pool.aclose()
    assert env.closes == 1 and fresh.closes == 1


async def test_close_all_closes_idle_and_borrowed_envs_exactly_once() -> None:
    maker = Maker()
    pool = EnvPool(maker, envs=[Env()])
    borrowed = [await pool.acquire() for _ in range(3)]
    pool.release(borrowed[0])
    await pool.aclose()
    pool.release(borrowed[1])  # given back late: closed already, only forgotten
    pool.release(borrowed[2], broken=True)
    assert [env.closes for env in borrowed] == [1, 1, 1]
    assert pool.created == 0 and pool.idle == 0
    with pytest.raises(RuntimeError, match="closed"):
        await pool.acquire()


def test_close_without_an_event_loop_closes_the_envs_given_at_creation() -> None:
    first = Env()
    pool = EnvPool(Maker(), size=1, envs=[first])
    assert pool.created == 1 and pool.idle == 1
    pool.close()
    pool.close()
    assert first.closes == 1


async def test_close_errors_are_logged_once_with_the_cause_and_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    maker = Maker(fail_close=True)
    pool = EnvPool(maker)
    envs = [await pool.acquire() for _ in range(3)]
    with caplog.at_level(logging.ERROR, logger="agentrl_envs.core.pool"):
        pool.release(envs[0], broken=True)
        for env in envs[1:]:
            pool.release(env)
        await pool.aclose()
        pool.close()
    assert [env.closes for env in envs] == [1, 1, 1]
    records = [r for r in caplog.records if "closing an environment" in r.getMessage()]
    assert len(records) == 3
    assert all(r.exc_info and "the sandbox is already gone" in str(r.exc_info[1]) for r in records)


async def test_envs_are_made_off_the_event_loop_and_a_failed_make_gives_its_slot_back() -> None:
    calls = 0

    def make() -> Env:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("refused the connection")
        return Env()

    pool = EnvPool(make, size=1)
    with pytest.raises(ConnectionError):
        await pool.acquire()
    env = await asyncio.wait_for(pool.acquire(), 1)  # the failed make did not keep the only slot
    assert env.made_on != threading.get_ident() and pool.created == 1
    await pool.aclose()


async def test_an_env_whose_acquire_was_cancelled_while_being_made_is_closed_not_leaked() -> None:
    gate = threading.Event()
    maker = Maker(gate)
    pool = EnvPool(maker, size=1)
    acquiring = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0.05)
    acquiring.cancel()
    with pytest.raises(asyncio.CancelledError):
        await acquiring
    gate.set()
    for _ in range(100):
        if maker.made and maker.made[0].closes:
            break
        await asyncio.sleep(0.01)
    assert [env.closes for env in maker.made] == [1] and pool.created == 0
    assert await asyncio.wait_for(pool.acquire(), 1) is maker.made[1]  # the cancelled one's slot is free again
    await pool.aclose()


async def test_concurrent_episodes_never_share_an_env_and_never_exceed_the_size() -> None:
    maker = Maker()
    pool = EnvPool(maker, size=3)
    in_use: set[int] = set()
    peak = 0

    async def episode() -> None:
        nonlocal peak
        env = await pool.acquire()
        assert id(env) not in in_use
        in_use.add(id(env))
        peak = max(peak, len(in_use))
        await asyncio.sleep(0.001)
        in_use.discard(id(env))
        pool.release(env, broken=len(maker.made) % 5 == 0)

    await asyncio.gather(*(episode() for _ in range(40)))
    assert peak == 3 and pool.created <= 3
    await pool.aclose()
    assert all(env.closes == 1 for env in maker.made)


def test_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        EnvPool(Maker(), size=0)
