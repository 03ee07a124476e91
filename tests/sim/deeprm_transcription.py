"""A line-by-line Python 3 transcription of the DeepRM reference (hongzimao/deeprm at its HEAD: ``parameters.py``,
``job_distribution.py``, ``environment.py``, ``other_agents.py``), for the differential tests only.

Changes, all mechanical: Python 2's ``/`` on ints is ``//``, ``xrange`` is ``range``; numpy's global generator is
a ``RandomState`` handed in (``np_random``), with the same calls in the same order; no Theano, no plotting, no
printing; the compact representation is left out. Quirks are kept as they are (the removal while iterating in
``Machine.time_proceed``, the placement range one short, the dropped arrivals at a full backlog), and so is the
reference's repetition (its three heuristics share all but their score).
"""

# The reference's branches and loops kept as written, so that each line can be read against it.
# ruff: noqa: RUF046, SIM102, SIM108, SIM114
from __future__ import annotations

import math
from typing import Any

import numpy as np


class Parameters:
    def __init__(self) -> None:
        self.simu_len = 10
        self.num_ex = 1
        self.episode_max_length = 200
        self.num_res = 2
        self.num_nw = 5
        self.time_horizon = 20
        self.max_job_len = 15
        self.res_slot = 10
        self.max_job_size = 10
        self.backlog_size = 60
        self.max_track_since_new = 10
        self.job_num_cap = 40
        self.new_job_rate = 0.7
        self.dist = Dist(self.num_res, self.max_job_size, self.max_job_len)
        self.delay_penalty = -1
        self.hold_penalty = -1
        self.dismiss_penalty = -1
        self.compute_dependent_parameters()

    def compute_dependent_parameters(self) -> None:
        assert self.backlog_size % self.time_horizon == 0
        self.backlog_width = self.backlog_size // self.time_horizon
        self.network_input_height = self.time_horizon
        self.network_input_width = (
            (self.res_slot + self.max_job_size * self.num_nw) * self.num_res + self.backlog_width + 1
        )
        self.network_output_dim = self.num_nw + 1


class Dist:
    def __init__(self, num_res: int, max_nw_size: int, job_len: int) -> None:
        self.num_res = num_res
        self.max_nw_size = max_nw_size
        self.job_len = job_len
        self.job_small_chance = 0.8
        self.job_len_big_lower = job_len * 2 // 3
        self.job_len_big_upper = job_len
        self.job_len_small_lower = 1
        self.job_len_small_upper = job_len // 5
        self.dominant_res_lower = max_nw_size // 2
        self.dominant_res_upper = max_nw_size
        self.other_res_lower = 1
        self.other_res_upper = max_nw_size // 5

    def bi_model_dist(self, np_random: np.random.RandomState) -> tuple[int, np.ndarray]:
        # -- job length --
        if np_random.rand() < self.job_small_chance:  # small job
            nw_len = np_random.randint(self.job_len_small_lower, self.job_len_small_upper + 1)
        else:  # big job
            nw_len = np_random.randint(self.job_len_big_lower, self.job_len_big_upper + 1)

        nw_size = np.zeros(self.num_res)

        # -- job resource request --
        dominant_res = np_random.randint(0, self.num_res)
        for i in range(self.num_res):
            if i == dominant_res:
                nw_size[i] = np_random.randint(self.dominant_res_lower, self.dominant_res_upper + 1)
            else:
                nw_size[i] = np_random.randint(self.other_res_lower, self.other_res_upper + 1)

        return nw_len, nw_size


def generate_sequence_work(pa: Parameters, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    np_random = np.random.RandomState(seed)  # np.random.seed(seed)

    simu_len = pa.simu_len * pa.num_ex

    nw_len_seq = np.zeros(simu_len, dtype=int)
    nw_size_seq = np.zeros((simu_len, pa.num_res), dtype=int)

    for i in range(simu_len):
        if np_random.rand() < pa.new_job_rate:  # a new job comes
            nw_len_seq[i], nw_size_seq[i, :] = pa.dist.bi_model_dist(np_random)

    nw_len_seq = np.reshape(nw_len_seq, [pa.num_ex, pa.simu_len])
    nw_size_seq = np.reshape(nw_size_seq, [pa.num_ex, pa.simu_len, pa.num_res])

    return nw_len_seq, nw_size_seq


class Env:
    def __init__(
        self, pa: Parameters, nw_len_seqs: np.ndarray, nw_size_seqs: np.ndarray, end: str = "all_done"
    ) -> None:
        self.pa = pa
        self.end = end
        self.curr_time = 0
        # Machine.__init__ shuffles its colormap with numpy's global generator: here one of its own.
        self.np_random = np.random.RandomState(0)
        self.nw_len_seqs = nw_len_seqs
        self.nw_size_seqs = nw_size_seqs
        self.seq_no = 0
        self.seq_idx = 0
        self.machine = Machine(pa, self.np_random)
        self.job_slot = JobSlot(pa)
        self.job_backlog = JobBacklog(pa)
        self.job_record = JobRecord()
        self.extra_info = ExtraInfo(pa)

    def get_new_job_from_seq(self, seq_no: int, seq_idx: int) -> Job:
        return Job(
            res_vec=self.nw_size_seqs[seq_no, seq_idx, :],
            job_len=self.nw_len_seqs[seq_no, seq_idx],
            job_id=len(self.job_record.record),
            enter_time=self.curr_time,
        )

    def observe(self) -> np.ndarray:
        backlog_width = int(math.ceil(self.pa.backlog_size / float(self.pa.time_horizon)))
        image_repr = np.zeros((self.pa.network_input_height, self.pa.network_input_width))
        ir_pt = 0
        for i in range(self.pa.num_res):
            image_repr[:, ir_pt : ir_pt + self.pa.res_slot] = self.machine.canvas[i, :, :]
            ir_pt += self.pa.res_slot
            for j in range(self.pa.num_nw):
                if self.job_slot.slot[j] is not None:  # fill in a block of work
                    image_repr[: self.job_slot.slot[j].len, ir_pt : ir_pt + self.job_slot.slot[j].res_vec[i]] = 1
                ir_pt += self.pa.max_job_size
        image_repr[: self.job_backlog.curr_size // backlog_width, ir_pt : ir_pt + backlog_width] = 1
        if self.job_backlog.curr_size % backlog_width > 0:
            image_repr[
                self.job_backlog.curr_size // backlog_width, ir_pt : ir_pt + self.job_backlog.curr_size % backlog_width
            ] = 1
        ir_pt += backlog_width
        image_repr[:, ir_pt : ir_pt + 1] = self.extra_info.time_since_last_new_job / float(
            self.extra_info.max_tracking_time_since_last_job
        )
        ir_pt += 1
        assert ir_pt == image_repr.shape[1]
        return image_repr

    def get_reward(self) -> float:
        reward = 0.0
        for j in self.machine.running_job:
            reward += self.pa.delay_penalty / float(j.len)
        for j in self.job_slot.slot:
            if j is not None:
                reward += self.pa.hold_penalty / float(j.len)
        for j in self.job_backlog.backlog:
            if j is not None:
                reward += self.pa.dismiss_penalty / float(j.len)
        return reward

    def step(self, a: int) -> tuple[np.ndarray, float, bool, JobRecord]:
        status = None
        done = False
        reward = 0.0

        if a == self.pa.num_nw:  # explicit void action
            status = "MoveOn"
        elif self.job_slot.slot[a] is None:  # implicit void action
            status = "MoveOn"
        else:
            allocated = self.machine.allocate_job(self.job_slot.slot[a], self.curr_time)
            if not allocated:  # implicit void action
                status = "MoveOn"
            else:
                status = "Allocate"

        if status == "MoveOn":
            self.curr_time += 1
            self.machine.time_proceed(self.curr_time)
            self.extra_info.time_proceed()

            # add new jobs
            self.seq_idx += 1

            if self.end == "no_new_job":  # end of new job sequence
                if self.seq_idx >= self.pa.simu_len:
                    done = True
            elif self.end == "all_done":  # everything has to be finished
                if (
                    self.seq_idx >= self.pa.simu_len
                    and len(self.machine.running_job) == 0
                    and all(s is None for s in self.job_slot.slot)
                    and all(s is None for s in self.job_backlog.backlog)
                ):
                    done = True
                elif self.curr_time > self.pa.episode_max_length:  # run too long, force termination
                    done = True

            if not done:
                if self.seq_idx < self.pa.simu_len:  # otherwise, end of new job sequence, i.e. no new jobs
                    new_job = self.get_new_job_from_seq(self.seq_no, self.seq_idx)

                    if new_job.len > 0:  # a new job comes
                        to_backlog = True
                        for i in range(self.pa.num_nw):
                            if self.job_slot.slot[i] is None:  # put in new visible job slots
                                self.job_slot.slot[i] = new_job
                                self.job_record.record[new_job.id] = new_job
                                to_backlog = False
                                break

                        if to_backlog:
                            if self.job_backlog.curr_size < self.pa.backlog_size:
                                self.job_backlog.backlog[self.job_backlog.curr_size] = new_job
                                self.job_backlog.curr_size += 1
                                self.job_record.record[new_job.id] = new_job
                            else:  # abort, backlog full
                                pass  # print("Backlog is full.")

                        self.extra_info.new_job_comes()

            reward = self.get_reward()

        elif status == "Allocate":
            self.job_record.record[self.job_slot.slot[a].id] = self.job_slot.slot[a]
            self.job_slot.slot[a] = None

            # dequeue backlog
            if self.job_backlog.curr_size > 0:
                self.job_slot.slot[a] = self.job_backlog.backlog[0]  # if backlog empty, it will be 0
                self.job_backlog.backlog[:-1] = self.job_backlog.backlog[1:]
                self.job_backlog.backlog[-1] = None
                self.job_backlog.curr_size -= 1

        ob = self.observe()
        info = self.job_record
        # (the reference resets on done; the tests read the record and stop)
        return ob, reward, done, info


class Job:
    def __init__(self, res_vec: Any, job_len: int, job_id: int, enter_time: int) -> None:
        self.id = job_id
        self.res_vec = res_vec
        self.len = job_len
        self.enter_time = enter_time
        self.start_time = -1  # not being allocated
        self.finish_time = -1


class JobSlot:
    def __init__(self, pa: Parameters) -> None:
        self.slot: list[Job | None] = [None] * pa.num_nw


class JobBacklog:
    def __init__(self, pa: Parameters) -> None:
        self.backlog: list[Job | None] = [None] * pa.backlog_size
        self.curr_size = 0


class JobRecord:
    def __init__(self) -> None:
        self.record: dict[int, Job] = {}


class Machine:
    def __init__(self, pa: Parameters, np_random: np.random.RandomState) -> None:
        self.num_res = pa.num_res
        self.time_horizon = pa.time_horizon
        self.res_slot = pa.res_slot
        self.avbl_slot = np.ones((self.time_horizon, self.num_res)) * self.res_slot
        self.running_job: list[Job] = []
        # colormap for graphical representation
        self.colormap = np.arange(1 / float(pa.job_num_cap), 1, 1 / float(pa.job_num_cap))
        np_random.shuffle(self.colormap)
        # graphical representation
        self.canvas = np.zeros((pa.num_res, pa.time_horizon, pa.res_slot))

    def allocate_job(self, job: Job, curr_time: int) -> bool:
        allocated = False
        for t in range(0, self.time_horizon - job.len):
            new_avbl_res = self.avbl_slot[t : t + job.len, :] - job.res_vec
            if np.all(new_avbl_res[:] >= 0):
                allocated = True
                self.avbl_slot[t : t + job.len, :] = new_avbl_res
                job.start_time = curr_time + t
                job.finish_time = job.start_time + job.len
                self.running_job.append(job)

                # update graphical representation
                used_color = np.unique(self.canvas[:])
                # WARNING: there should be enough colors in the color map
                for color in self.colormap:
                    if color not in used_color:
                        new_color = color
                        break

                assert job.start_time != -1
                assert job.finish_time != -1
                assert job.finish_time > job.start_time
                canvas_start_time = job.start_time - curr_time
                canvas_end_time = job.finish_time - curr_time

                for res in range(self.num_res):
                    for i in range(canvas_start_time, canvas_end_time):
                        avbl_slot = np.where(self.canvas[res, i, :] == 0)[0]
                        self.canvas[res, i, avbl_slot[: job.res_vec[res]]] = new_color
                break
        return allocated

    def time_proceed(self, curr_time: int) -> None:
        self.avbl_slot[:-1, :] = self.avbl_slot[1:, :]
        self.avbl_slot[-1, :] = self.res_slot

        for job in self.running_job:
            if job.finish_time <= curr_time:
                self.running_job.remove(job)

        # update graphical representation
        self.canvas[:, :-1, :] = self.canvas[:, 1:, :]
        self.canvas[:, -1, :] = 0


class ExtraInfo:
    def __init__(self, pa: Parameters) -> None:
        self.time_since_last_new_job = 0
        self.max_tracking_time_since_last_job = pa.max_track_since_new

    def new_job_comes(self) -> None:
        self.time_since_last_new_job = 0

    def time_proceed(self) -> None:
        if self.time_since_last_new_job < self.max_tracking_time_since_last_job:
            self.time_since_last_new_job += 1


# -- other_agents.py --


def get_packer_action(machine: Machine, job_slot: JobSlot) -> int:
    align_score = 0
    act = len(job_slot.slot)  # if no action available, hold
    for i in range(len(job_slot.slot)):
        new_job = job_slot.slot[i]
        if new_job is not None:  # there is a pending job
            avbl_res = machine.avbl_slot[: new_job.len, :]
            res_left = avbl_res - new_job.res_vec
            if np.all(res_left[:] >= 0):  # enough resource to allocate
                tmp_align_score = avbl_res[0, :].dot(new_job.res_vec)
                if tmp_align_score > align_score:
                    align_score = tmp_align_score
                    act = i
    return act


def get_sjf_action(machine: Machine, job_slot: JobSlot) -> int:
    sjf_score = 0.0
    act = len(job_slot.slot)  # if no action available, hold
    for i in range(len(job_slot.slot)):
        new_job = job_slot.slot[i]
        if new_job is not None:  # there is a pending job
            avbl_res = machine.avbl_slot[: new_job.len, :]
            res_left = avbl_res - new_job.res_vec
            if np.all(res_left[:] >= 0):  # enough resource to allocate
                tmp_sjf_score = 1 / float(new_job.len)
                if tmp_sjf_score > sjf_score:
                    sjf_score = tmp_sjf_score
                    act = i
    return act


def get_packer_sjf_action(machine: Machine, job_slot: JobSlot, knob: float) -> int:
    combined_score = 0.0
    act = len(job_slot.slot)  # if no action available, hold
    for i in range(len(job_slot.slot)):
        new_job = job_slot.slot[i]
        if new_job is not None:  # there is a pending job
            avbl_res = machine.avbl_slot[: new_job.len, :]
            res_left = avbl_res - new_job.res_vec
            if np.all(res_left[:] >= 0):  # enough resource to allocate
                tmp_align_score = avbl_res[0, :].dot(new_job.res_vec)
                tmp_sjf_score = 1 / float(new_job.len)
                tmp_combined_score = knob * tmp_align_score + (1 - knob) * tmp_sjf_score
                if tmp_combined_score > combined_score:
                    combined_score = tmp_combined_score
                    act = i
    return act
