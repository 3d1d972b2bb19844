"""The ``task`` program: one task of a cluster, training or serving (lesson 08).

``python -m dpkit task ARGS``, and the program ``task`` of :class:`dpkit.tasks.Group`:
:func:`main` reads the task with :func:`dpkit.launcher.parse` and :func:`run` does it. A ps,
and a worker under ``ParameterServerStrategy``, serve until the chief has gone (:func:`serve`);
every task that trains runs the one loop of :func:`train`, which a :class:`Flavour` fills in.
The chief writes checkpoints and TensorBoard scalars to ``--logdir`` and resumes from them; a
stalled task names the peers that do not answer and exits with code 1 (:func:`watch`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time

import tensorflow as tf

from dpkit import cluster, compat, launcher, softmax
from dpkit.launcher import Task
from dpkit.plumbing import contract, procs
from dpkit.plumbing.contract import Exit
from dpkit.programs import server, workers

# ----------------------------------------------------------------------------- logging


class Log:
    """Timestamped log lines (prefixed with the task's name unless a Group reads them), and
    records (JSON lines) when :data:`dpkit.plumbing.contract.RECORDS` is set."""

    def __init__(self, task: Task):
        self.records = bool(os.environ.get(contract.RECORDS))
        self.prefix = "" if self.records else f"{task.name} "
        self.lock = threading.Lock()

    def __call__(self, message: str) -> None:
        with self.lock:
            print(f"{time.strftime('%H:%M:%S')} {self.prefix}{message}", flush=True)

    def record(self, message: contract.Record) -> None:
        if self.records:
            with self.lock:
                procs.record(message)


def watch(task: Task, log: Log):
    """Start a watchdog thread that ends a stalled task (exit code 1) with
    :func:`stall_message`; return ``tick``, to call whenever training moves."""
    state = {"moved": time.monotonic(), "started": False}

    def tick() -> None:
        state.update(moved=time.monotonic(), started=True)

    def run():
        while True:
            time.sleep(0.5)
            limit = task.stall_timeout if state["started"] else task.start_timeout
            if time.monotonic() - state["moved"] > limit:
                message = stall_message(task, state["started"], limit)
                log(message)
                print(message, file=sys.stderr, flush=True)
                os._exit(Exit.FAILED)

    threading.Thread(target=run, daemon=True, name="dpkit-stall").start()
    return tick


def stall_message(task: Task, started: bool, limit: float) -> str:
    """Why the task gives up: which peers do not answer, and why that stops a step."""
    silent = [f"{n} ({a})" for n, a in task.peers().items() if not procs.port_answers(a, 1.0)]
    what = "no training step" if started else "training did not start"
    who = "every task's port answers, so one is slow or cut off mid-way"
    if silent:
        who = f"these tasks do not answer: {', '.join(silent)}"
    why = ""
    if task.flavour == "mirrored" or task.sync_replicas:
        why = "; a synchronous step waits for every worker, so one lost worker stops them all"
    return f"giving up: {what} in {limit:g} s; {who}{why}."


# ----------------------------------------------------------------------------- serving


POLL_S = 0.1  # how often a server knocks on the chief's port until it first answers


def wait_for_chief(task: Task, log: Log, timeout: float | None = None) -> bool:
    """Wait for the chief to answer (within ``timeout``, if given), then to go (1.5 s silent);
    ``False`` if it never answered within ``timeout``."""
    name, chief = task.chief_name, task.peers()[task.chief_name]  # never this task
    if timeout is not None:
        deadline = time.monotonic() + timeout
        while not procs.port_answers(chief):
            if time.monotonic() > deadline:
                log(f"the chief {name} ({chief}) never answered in {timeout:g} s; stopping")
                return False
            time.sleep(POLL_S)
        log(f"the chief {name} is up; serving until it finishes")
    misses = 0
    while misses < 3:  # 1.5 s without an answer: the chief has gone
        time.sleep(0.5)
        misses = 0 if procs.port_answers(chief) else misses + 1
    log(f"the chief {name} stopped answering (it finished, or we are cut off); stopping")
    return True


def serve(task: Task, log: Log) -> int:
    """A ps, or a worker under ParameterServerStrategy: a TF server until the chief goes."""
    threads = max(2, task.num_workers + 1)  # fewer deadlocks on 2 cores (lesson 07)
    try:  # `running` serves while it is referenced
        running = server.start_server(task.cluster, task.job, task.index, threads)  # noqa: F841
    except Exception as error:  # noqa: BLE001 -- TensorFlow's errors: report and exit
        log(f"could not start the server at {task.address}: {error}")
        return Exit.FAILED
    log(f"serving at {task.address} ({'variables' if task.job == 'ps' else 'steps'} for the chief)")
    return Exit.OK if wait_for_chief(task, log, task.start_timeout) else Exit.FAILED


# ----------------------------------------------------------------------------- the loop


class Flavour:
    """What one flavour does at each point of :func:`train` (TF2 defaults, TF1 overrides).
    Each adds ``begin(stack)``: set up (and log how; ``stack`` closes what must be closed),
    return the first global step; and ``advance(step)``: train on from global step ``step``,
    return the new global step and the last loss. A ``collective`` flavour's process joined
    a collective, and leaves through TensorFlow's barrier (``contract.ThroughBarrier``)."""

    collective = False

    def __init__(self, task: Task, log: Log):
        self.task, self.log = task, log
        self.x, self.y, self.x_test, self.y_test = softmax.digits(task.seed)
        self.writer = None  # the chief's TensorBoard writer

    def finished(self, step: int) -> bool:
        return step >= self.task.train_steps

    def report(self, step: int, loss: float, first: int, seconds: float) -> None:
        """Log progress every ``--log-every`` steps and at the end, as a line and a scalar."""
        if step % self.task.log_every and not self.finished(step):
            return
        rate = (step - first) / max(seconds, 1e-9)
        self.log(f"step {step}/{self.task.train_steps} loss {loss:.4f} ({rate:.0f} steps/s)")
        self.log.record(contract.TaskProgress(step=step, loss=loss))
        if self.writer is not None:
            with self.writer.as_default():
                tf.summary.scalar("loss", loss, step=step)

    def save(self, step: int) -> None:
        """A checkpoint every ``--checkpoint-every`` steps and at the end."""
        if step % self.task.checkpoint_every == 0 or self.finished(step):
            self.manager.save(checkpoint_number=step)

    def end(self, step: int, loss: float) -> None:
        if self.writer is not None:
            self.writer.flush()
        self.finish(step, self.w.numpy(), self.b.numpy(), loss)

    def finish(self, step: int, w, b, loss: float) -> None:
        acc = workers.accuracy(w, b, self.x_test, self.y_test)
        last = f"last loss {loss:.4f}" if loss == loss else "no step left to train"  # nan: none
        self.log(f"done: global step {step}, {last}, test accuracy {acc:.3f}")
        self.log.record(
            contract.TaskDone(
                done=True, global_step=step, loss=loss, accuracy=acc, logdir=self.task.logdir
            )
        )

    def variables(self, strategy, directory: str) -> float:
        """``w``, ``b`` and the global step in ``strategy``'s scope, and their checkpoints; the
        chief restores the newest one, if any. Returns 1.0 if it did, else 0.0."""
        w0, b0 = softmax.softmax_init(self.x.shape[1], 10, self.task.seed)
        with strategy.scope():
            self.w, self.b = tf.Variable(w0, name="w"), tf.Variable(b0, name="b")
            self.global_step = tf.Variable(0, dtype=tf.int64, name="global_step")
        self.checkpoint = tf.train.Checkpoint(w=self.w, b=self.b, global_step=self.global_step)
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=3)
        if not self.task.is_chief:
            return 0.0
        self.writer = tf.summary.create_file_writer(os.path.join(self.task.logdir, "train"))
        latest = self.manager.latest_checkpoint
        if not latest:
            return 0.0
        self.checkpoint.restore(latest)
        self.log(f"resumed from {latest} at step {int(self.global_step.numpy())}")
        return 1.0


CHIEF_SEEN_S = 1.0  # the chief answers at least this long after it starts training


def train(tick, flavour: Flavour) -> int | contract.ThroughBarrier:
    """The training loop of every flavour: step, show progress, save, and at the end finish."""
    with contextlib.ExitStack() as stack:
        step = flavour.begin(stack)  # the chief's port answers from here on
        tick()
        loss, started, first = float("nan"), time.perf_counter(), step
        while not flavour.finished(step):
            step, loss = flavour.advance(step)
            tick()
            flavour.report(step, loss, first, time.perf_counter() - started)
            flavour.save(step)
    flavour.end(step, loss)
    if flavour.task.is_chief:
        # the servers learn that the chief came by seeing its port answer (a TF server lives
        # as long as its process): a chief with nothing left to train, rerun on a finished
        # checkpoint, would otherwise come and go between two of their polls
        time.sleep(max(0.0, CHIEF_SEEN_S - (time.perf_counter() - started)))
    return contract.ThroughBarrier(Exit.OK) if flavour.collective else Exit.OK


# ----------------------------------------------------------------------------- the flavours


class PSStrategy(Flavour):
    """The chief of a ``ParameterServerStrategy`` cluster; the workers and ps serve."""

    def begin(self, stack: contextlib.ExitStack) -> int:
        task = self.task
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(task.cluster), task_type="chief", task_id=0, rpc_layer="grpc"
        )
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        self.variables(strategy, task.logdir)
        x, y, batch, lr = self.x, self.y, task.batch_size, task.learning_rate

        def dataset_fn():  # runs on each worker; no seed, so each worker draws its own order
            data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x))
            return data.repeat().batch(batch, drop_remainder=True)

        self.iterator = iter(self.coordinator.create_per_worker_dataset(dataset_fn))
        self.train_step = softmax.ps_step(strategy, self.w, self.b, lr, self.global_step)
        step = int(self.global_step.numpy())
        self.log(
            f"training with ParameterServerStrategy on {task.num_workers} worker(s), "
            f"{len(task.cluster['ps'])} ps; steps {step} -> {task.train_steps}"
        )
        return step

    def advance(self, step: int) -> tuple[int, float]:
        task = self.task
        chunk = min(  # up to the next log line, checkpoint or the end
            task.log_every - step % task.log_every,
            task.checkpoint_every - step % task.checkpoint_every,
            task.train_steps - step,
        )
        schedule = self.coordinator.schedule
        results = [schedule(self.train_step, (self.iterator,)) for _ in range(chunk)]
        self.coordinator.join()
        return int(self.global_step.numpy()), float(results[-1].fetch())


class Mirrored(Flavour):
    """A worker (or the chief) of a ``MultiWorkerMirroredStrategy`` cluster."""

    collective = True

    def begin(self, stack: contextlib.ExitStack) -> int:
        task = self.task
        os.environ["TF_CONFIG"] = task.tf_config()

        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        members = ["chief:0"] if task.cluster.get("chief") else []
        members += [f"worker:{i}" for i in range(task.num_workers)]
        rank, size = members.index(task.name), len(members)
        # every task writes (a collective save needs all); only the chief's copy is kept
        scratch = os.path.join(task.logdir, f"tmp-{task.job}-{task.index}")
        self.directory = task.logdir if task.is_chief else scratch
        restored = self.variables(strategy, self.directory)
        workers.share_from_chief(strategy, restored, self.w, self.b, self.global_step)
        lr, batch = task.learning_rate, task.batch_size
        self.step_fn = softmax.mirrored_step(strategy, self.w, self.b, lr, batch, self.global_step)
        step = int(self.global_step.numpy())
        self.log(
            f"training with MultiWorkerMirroredStrategy as task {rank} of {size}; "
            f"steps {step} -> {task.train_steps}"
        )
        self.batches = workers.batches(self.x, self.y, task.batch_size, task.seed)
        for _ in range(step):
            next(self.batches)  # the same data order as a run that never stopped
        per_task = task.batch_size // size
        self.mine = slice(rank * per_task, (rank + 1) * per_task)
        return step

    def advance(self, step: int) -> tuple[int, float]:
        xb, yb = next(self.batches)
        loss = self.step_fn(tf.constant(xb[self.mine]), tf.constant(yb[self.mine]))
        return step + 1, float(loss)

    def end(self, step: int, loss: float) -> None:
        if not self.task.is_chief:
            shutil.rmtree(self.directory, ignore_errors=True)
        super().end(step, loss)


class TF1(Flavour):
    """A worker of TF1 between-graph replication; worker 0 is the chief."""

    mine = 0  # steps run here
    step = 0  # the last global step seen

    def begin(self, stack: contextlib.ExitStack) -> int:
        v1, task = tf.compat.v1, self.task
        v1.disable_eager_execution()
        tf.get_logger().setLevel("ERROR")  # the TF1 APIs' deprecation notices: known, and noisy
        workers.quiet_closed_queue_runners()
        threads = max(2, task.num_workers + 1)
        config = v1.ConfigProto(inter_op_parallelism_threads=threads)
        self.server = tf.distribute.Server(task.cluster, "worker", task.index, config=config)
        w0, b0 = softmax.softmax_init(self.x.shape[1], 10, task.seed)

        def model():
            self.xb = v1.placeholder(tf.float32, [None, self.x.shape[1]])
            self.yb = v1.placeholder(tf.int32, [None])
            w = v1.get_variable("w", initializer=w0)
            b = v1.get_variable("b", initializer=b0)
            logits = tf.matmul(self.xb, w) + b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(self.yb, logits))
            v1.summary.scalar("loss", loss)
            return loss

        sync, aggregate = task.sync_replicas, task.replicas_to_aggregate
        global_step, loss, opt, train_op = compat.worker_graph(
            task.cluster, task.index, model, task.learning_rate, sync, aggregate
        )
        self.fetches = [train_op, loss, global_step]
        # a sync worker other than the chief steps on until the chief has gone: stopping at the
        # last step by itself, it could leave the chief waiting forever for its last round
        stop_here = task.is_chief or not sync
        hooks = [v1.train.StopAtStepHook(last_step=task.train_steps)] if stop_here else []
        if sync:
            hooks.append(opt.make_session_run_hook(is_chief=task.is_chief))
        # the chief's session saves checkpoints and summaries
        saving = {"checkpoint_dir": task.logdir, "save_checkpoint_steps": task.checkpoint_every}
        saving |= {"save_summaries_steps": task.log_every, "log_step_count_steps": 0}
        # after the last step the sync chief's queue runner still waits for a round that no
        # worker will finish: give it 2 s on close, not 120
        saving["stop_grace_period_secs"] = 2
        target, index = self.server.target, task.index
        session = workers.tf1_session(target, index, task.is_chief, hooks, threads, **saving)
        if not task.is_chief:
            threading.Thread(target=self.leave_with_chief, daemon=True).start()
        self.session = stack.enter_context(session)  # the chief's saves as it closes
        self.batches = workers.batches(self.x, self.y, task.batch_size, task.seed + task.index)
        # the raw session: hooks would add their fetches (summaries need the feed)
        step = int(
            self.session.run_step_fn(lambda step_context: step_context.session.run(global_step))
        )
        mode = f"sync, {aggregate} of {task.num_workers}" if sync else "async"
        self.log(
            f"training with TF1 between-graph replication ({mode}); "
            f"global step {step} -> {task.train_steps}"
        )
        return step

    def advance(self, step: int) -> tuple[int, float]:
        xs, ys = next(self.batches)
        _, loss, step = self.session.run(self.fetches, {self.xb: xs, self.yb: ys})
        self.mine, self.step = self.mine + 1, int(step)
        return int(step), float(loss)

    def finished(self, step: int) -> bool:
        return self.session.should_stop()

    def report(self, step: int, loss: float, first: int, seconds: float) -> None:
        if self.mine % self.task.log_every:
            return  # the session writes the chief's summaries
        rate = self.mine / max(seconds, 1e-9)
        self.log(
            f"global step {step}/{self.task.train_steps} loss {loss:.4f} "
            f"({self.mine} steps here, {rate:.0f}/s)"
        )
        self.log.record(contract.TaskProgress(step=step, loss=loss, mine=self.mine))

    def save(self, step: int) -> None:
        pass  # the chief's session saves every --checkpoint-every steps

    def end(self, step: int, loss: float) -> None:
        if self.task.is_chief:  # the session saved a last checkpoint as it closed
            saved = tf.train.load_checkpoint(self.task.logdir).get_tensor
            self.finish(int(saved("global_step")), saved("w"), saved("b"), loss)
        else:
            self.report_worker()

    def report_worker(self) -> None:
        self.log(f"done: {self.mine} steps here; last global step seen {self.step}")
        self.log.record(contract.TaskDone(done=True, global_step=self.step, mine=self.mine))

    def leave_with_chief(self) -> None:
        """A worker that is not the chief ends when the chief has gone (started once the
        session exists: the chief was up, it initialised the variables)."""
        wait_for_chief(self.task, self.log)
        self.report_worker()  # flushed
        os._exit(Exit.OK)


# ----------------------------------------------------------------------------- main

FLAVOURS = {"ps_strategy": PSStrategy, "mirrored": Mirrored, "tf1": TF1}


def run(task: Task) -> int | contract.ThroughBarrier:
    """Run the task; return its exit code (``Exit.OK`` done, ``Exit.FAILED`` failed or
    stalled), as a ``contract.ThroughBarrier`` if it joined a collective."""
    log = Log(task)
    for note in task.notes:
        log(f"note: {note}")
    role = "chief, " if task.is_chief else ""
    log(f"{role}{task.flavour} flavour, address {task.address}, task from {task.source}")
    if not task.trains:
        return serve(task, log)
    tick = watch(task, log)
    if task.is_chief:
        os.makedirs(task.logdir, exist_ok=True)
    if task.flavour == "ps_strategy":
        try:
            cluster.probe(task.peers(), timeout=task.start_timeout)
        except cluster.ClusterNotReadyError as error:
            log(f"cannot start: {error}")
            return Exit.FAILED
    return train(tick, FLAVOURS[task.flavour](task, log))


def main(
    argv: list[str], environ=None, prog: str = "python -m dpkit task"
) -> int | contract.ThroughBarrier:
    """``python -m dpkit task ARGS``: 0 done, 1 failed or stalled, 2 bad flags (``--help``: 0)."""
    task = launcher.read(argv, environ, prog=prog)
    return task if isinstance(task, int) else run(task)
