"""Gillespie's direct method for a birth-death process, the code under test (it carries one defect)."""
import numpy as np


def birth_death(replicas, birth, death, t_end, rng, start=0):
    """The copy numbers at t_end of independent replicas of 0 -> X at rate birth, X -> 0 at rate death * X."""
    x = np.full(replicas, start, dtype=np.int64)
    t = np.zeros(replicas)
    running = np.ones(replicas, dtype=bool)
    while running.any():
        total = birth + death * x[running]
        wait = rng.exponential(total)  # the waiting time to the next reaction
        t[running] += wait
        running[running] = t[running] <= t_end
        active = np.flatnonzero(running)
        born = rng.random(active.size) * (birth + death * x[active]) < birth
        x[active] += np.where(born, 1, -1)
    return x
