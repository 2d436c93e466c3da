"""The request queue and the worker thread that owns a model.

Requests are `Job`s: the event loop submits them, one worker thread runs them (the model's Rust code
releases the GIL, so the loop keeps serving other clients meanwhile) and sends their events back to
the loop through the job's own asyncio queue, so no request ever sees another's output. A job can be
cancelled at any time (its client went away): the worker skips it if it has not started and stops it
between two tokens if it has, so its slot is free at once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, List, Optional, Tuple

from .errors import APIError, unavailable


class Job:
    """One request's work (`payload`) and the channel its results come back on."""

    def __init__(self, payload: Any, loop: Optional[asyncio.AbstractEventLoop] = None, size: int = 1):
        self.payload = payload
        self.size = size                       # how much of a batch it fills (embedding inputs)
        self.loop = loop or asyncio.get_running_loop()
        self.events: "asyncio.Queue[Tuple[str, Any]]" = asyncio.Queue()
        self._cancelled = threading.Event()
        self.submitted = time.perf_counter()
        self.started: Optional[float] = None
        self.first_token: Optional[float] = None
        self.finished = False

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def emit(self, kind: str, value: Any = None) -> None:
        """Called on the worker thread: hands one event to the request's coroutine."""
        if kind in ("done", "error"):
            self.finished = True
        try:
            self.loop.call_soon_threadsafe(self.events.put_nowait, (kind, value))
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._cancelled.set()

    def fail(self, error: APIError) -> None:
        self.emit("error", error)


class Worker:
    """A bounded FIFO of jobs served by one thread. `handler(jobs)` runs a batch: several jobs when
    `max_batch` is above one (their `size`s add up to at most that); a generator's handler also takes
    jobs queued while it runs (`take_more`). A full queue refuses with 429, a draining one with 503."""

    def __init__(self, name: str, handler: Callable[["Worker", List[Job]], None], max_queue: int,
                 max_batch: int = 1, on_idle: Optional[Callable[[], None]] = None):
        self.name = name
        self._handler = handler
        self.max_queue = max_queue
        self.max_batch = max_batch
        self._cv = threading.Condition()
        self._queue: Deque[Job] = deque()
        self._accepting = True
        self._stopping = False
        self._deadline: Optional[float] = None
        self.running = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # event-loop side
    def submit(self, job: Job) -> Job:
        with self._cv:
            if not self._accepting:
                raise unavailable()
            if len(self._queue) >= self.max_queue:
                raise APIError(429, f"the server is busy: {len(self._queue)} requests are waiting; retry later",
                               code="queue_full")
            self._queue.append(job)
            self._cv.notify()
        return job

    @property
    def depth(self) -> int:
        return len(self._queue)

    @property
    def accepting(self) -> bool:
        return self._accepting

    def drain(self, timeout: float) -> None:
        """Stops taking requests; what is queued or running may finish within `timeout` seconds,
        after which it is answered 503 (streams stop between two tokens)."""
        with self._cv:
            self._accepting = False
            self._deadline = time.monotonic() + timeout
            self._cv.notify_all()

    def stop(self, join: float = 5.0) -> None:
        with self._cv:
            self._accepting = False
            self._stopping = True
            self._deadline = time.monotonic()
            self._cv.notify_all()
        self._thread.join(join)

    # worker side
    def expired(self) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline

    def should_stop(self, job: Job) -> bool:
        """Checked between tokens: the client left (stop quietly) or the shutdown grace ran out (503)."""
        if job.cancelled:
            return True
        if self.expired():
            job.fail(unavailable("the server shut down before this request finished"))
            job.cancel()
            return True
        return False

    def take_more(self, limit: int) -> List[Job]:
        """Called by a running handler: up to `limit` queued jobs, without waiting (a generator's
        continuous batching takes new requests between two steps)."""
        jobs: List[Job] = []
        with self._cv:
            while self._queue and len(jobs) < limit and not self.expired():
                job = self._queue.popleft()
                if not job.cancelled:
                    jobs.append(job)
        return jobs

    def _take(self) -> Optional[List[Job]]:
        with self._cv:
            while True:
                while self._queue and (self._queue[0].cancelled or self.expired()):
                    job = self._queue.popleft()
                    if not job.cancelled:
                        job.fail(unavailable("the server shut down before this request started"))
                if self._queue:
                    break
                if self._stopping:
                    return None
                self._cv.wait(0.5)
            jobs = [self._queue.popleft()]
            total = jobs[0].size
            while self._queue and total + self._queue[0].size <= self.max_batch:
                job = self._queue.popleft()
                if not job.cancelled:
                    jobs.append(job)
                    total += job.size
            self.running = len(jobs)
            return jobs

    def _loop(self) -> None:
        while True:
            jobs = self._take()
            if jobs is None:
                return
            now = time.perf_counter()
            for j in jobs:
                j.started = now
            try:
                self._handler(self, jobs)
            except APIError as e:
                for j in jobs:
                    if not j.finished:
                        j.fail(e)
            except BaseException as e:  # noqa: BLE001 - the worker must outlive any one request
                err = APIError(500, f"internal error: {type(e).__name__}: {e}", code="internal_error")
                for j in jobs:
                    if not j.finished:
                        j.fail(err)
            finally:
                self.running = 0
