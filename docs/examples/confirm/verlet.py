"""A harmonic oscillator x'' = -omega**2 x, integrated with velocity Verlet (written for the physverify docs)."""


def integrate(x0, v0, t_end, n_steps, omega, force=None):
    """(x, v) at t_end from (x0, v0) at t = 0; force(t), optional, is an external force per unit mass."""
    h = t_end / n_steps
    t, x, v = 0.0, float(x0), float(v0)
    a = acceleration(t, x, omega, force)
    for _ in range(n_steps):
        v_half = v + 0.5 * h * a
        x = x + h * v_half
        a_new = acceleration(t + h, x, omega, force)
        v = v_half + 0.5 * h * a_new
        a, t = a_new, t + h
    return x, v


def acceleration(t, x, omega, force):
    """The acceleration -omega**2 x, plus the external force per unit mass when given."""
    return -omega**2 * x + (0.0 if force is None else force(t))
