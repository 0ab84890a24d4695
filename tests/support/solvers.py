"""Small ODE solvers written for the tests, each correct and with one seeded defect.

Every factory takes the right-hand side ``f(t, y)`` of the problem and returns an
integrator on physverify's contract ``integrate(source, y0, t_end, n_steps) -> state at
t_end``, integrating y' = f(t, y) + source(t) from t = 0. ``defect=True`` seeds the
mistake named in the factory's docstring.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Rhs = Callable[[float, np.ndarray], np.ndarray]
Source = Callable[[float], np.ndarray]
Integrate = Callable[[Source, np.ndarray, float, int], np.ndarray]


def forward_euler(f: Rhs, defect: bool = False) -> Integrate:
    """First order. Defect: the clock is never advanced, so f and the source always see t = 0."""

    def integrate(source: Source, y0: np.ndarray, t_end: float, n_steps: int) -> np.ndarray:
        h, t, y = t_end / n_steps, 0.0, np.array(y0, dtype=float)
        for _ in range(n_steps):
            y = y + h * (f(t, y) + source(t))
            t = t if defect else t + h
        return y

    return integrate


def explicit_midpoint(f: Rhs, defect: bool = False) -> Integrate:
    """Second order (Hairer, Norsett and Wanner, Solving ODEs I, sec. II.1). Defect: the half step is a full step h."""

    def integrate(source: Source, y0: np.ndarray, t_end: float, n_steps: int) -> np.ndarray:
        h, t, y = t_end / n_steps, 0.0, np.array(y0, dtype=float)
        half = h if defect else 0.5 * h
        for _ in range(n_steps):
            y_mid = y + half * (f(t, y) + source(t))
            y = y + h * (f(t + 0.5 * h, y_mid) + source(t + 0.5 * h))
            t += h
        return y

    return integrate


def rk4(f: Rhs, defect: bool = False) -> Integrate:
    """Classical fourth-order Runge-Kutta (Butcher, Numerical Methods for ODEs, sec. 23).

    Defect: k3 is evaluated at t + h instead of t + h/2.
    """

    def integrate(source: Source, y0: np.ndarray, t_end: float, n_steps: int) -> np.ndarray:
        h, t, y = t_end / n_steps, 0.0, np.array(y0, dtype=float)

        def g(s: float, x: np.ndarray) -> np.ndarray:
            return f(s, x) + source(s)

        t3 = h if defect else 0.5 * h
        for _ in range(n_steps):
            k1 = g(t, y)
            k2 = g(t + 0.5 * h, y + 0.5 * h * k1)
            k3 = g(t + t3, y + 0.5 * h * k2)
            k4 = g(t + h, y + h * k3)
            y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            t += h
        return y

    return integrate


def velocity_verlet(accel: Callable[[float, float], float], defect: bool = False) -> Integrate:
    """Velocity Verlet for x'' = accel(t, x), state (x, v); second order (Hairer, Lubich and Wanner,
    Geometric Numerical Integration, sec. I.1.4). The source's second component is added to the
    acceleration and its first to the drift velocity. Defect: the second half kick uses the old
    acceleration."""

    def integrate(source: Source, y0: np.ndarray, t_end: float, n_steps: int) -> np.ndarray:
        h, t = t_end / n_steps, 0.0
        x, v = float(y0[0]), float(y0[1])
        a = accel(t, x) + source(t)[1]
        for _ in range(n_steps):
            v_half = v + 0.5 * h * a
            x = x + h * (v_half + source(t + 0.5 * h)[0])
            a_new = accel(t + h, x) + source(t + h)[1]
            v = v_half + 0.5 * h * (a if defect else a_new)
            a, t = a_new, t + h
        return np.array([x, v])

    return integrate


def oscillator_rhs(omega: float) -> Rhs:
    """The harmonic oscillator x'' = -omega**2 x as a first-order system (Taylor, Classical Mechanics, sec. 5.2)."""
    return lambda t, y: np.array([y[1], -omega**2 * y[0]])


def oscillator_accel(omega: float) -> Callable[[float, float], float]:
    """The acceleration -omega**2 x of the harmonic oscillator."""
    return lambda t, x: -omega**2 * x


def explicit_midpoint_run(f: Rhs, defect: bool = False) -> Callable[[Source, np.ndarray, float, int], tuple]:
    """The midpoint rule returning its run ``(times, states)``, every step recorded.

    Defect: an off-by-one in the output, each state is recorded with the time of the next
    step (the end state itself is right, so only the run shows it).
    """

    def integrate_run(source: Source, y0: np.ndarray, t_end: float, n_steps: int) -> tuple:
        h = t_end / n_steps
        times = [k * h for k in range(n_steps + 1)]
        states = [np.array(y0, dtype=float)]
        for t in times[:-1]:
            y = states[-1]
            y_mid = y + 0.5 * h * (f(t, y) + source(t))
            states.append(y + h * (f(t + 0.5 * h, y_mid) + source(t + 0.5 * h)))
        if defect:
            states = states[:1] + states[:-2] + states[-1:]
        return times, states

    return integrate_run
