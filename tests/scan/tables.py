"""The classical Butcher tables, written as a user writes them (Fractions, np.sqrt), with their orders.

Sources: Butcher, Numerical Methods for ODEs (2016), sec. 23 and 32 (Euler, midpoint, Heun,
Ralston, Kutta's third order, RK4, the 3/8 rule); Hairer, Norsett, Wanner, Solving ODEs I,
Table II.5.2 (Dormand-Prince 5(4)) and sec. II.7 (Gauss-Legendre); Bogacki and Shampine,
Appl. Math. Lett. 2 (1989) (3(2)); Tsitouras, Comput. Math. Appl. 62 (2011) (5(4)); Shu and
Osher, J. Comput. Phys. 77 (1988) (SSP-RK3). Each entry: (source text, orders of b and of the
embedded row).
"""

from __future__ import annotations

F = "from fractions import Fraction as F\nimport numpy as np\n"

CLASSICAL: dict[str, tuple[str, tuple[int, ...]]] = {
    "euler": (F + "A = [[0]]\nb = [1]\nc = [0]\n", (1,)),
    "midpoint": (F + "A = [[0, 0], [F(1, 2), 0]]\nb = [0, 1]\nc = [0, F(1, 2)]\n", (2,)),
    "heun": (F + "A = [[0, 0], [1, 0]]\nb = [F(1, 2), F(1, 2)]\nc = [0, 1]\n", (2,)),
    "ralston": (F + "A = [[0, 0], [F(2, 3), 0]]\nb = [F(1, 4), F(3, 4)]\nc = [0, F(2, 3)]\n", (2,)),
    "rk3": (F + "A = [[0, 0, 0], [F(1, 2), 0, 0], [-1, 2, 0]]\nb = [F(1, 6), F(2, 3), F(1, 6)]\nc = [0, F(1, 2), 1]\n",
            (3,)),
    "rk4": (F + "A = np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]])\n"
            "b = np.array([1, 2, 2, 1]) / 6\nc = np.array([0, 0.5, 0.5, 1])\n", (4,)),
    "three_eighths": (F + "A = [[0, 0, 0, 0], [F(1, 3), 0, 0, 0], [F(-1, 3), 1, 0, 0], [1, -1, 1, 0]]\n"
                      "b = [F(1, 8), F(3, 8), F(3, 8), F(1, 8)]\nc = [0, F(1, 3), F(2, 3), 1]\n", (4,)),
    "bogacki_shampine": (F + "A = [[], [1/2], [0, 3/4], [2/9, 1/3, 4/9]]\nb = [2/9, 1/3, 4/9, 0]\n"
                         "b_hat = [7/24, 1/4, 1/3, 1/8]\nc = [0, 1/2, 3/4, 1]\n", (3, 2)),
    "dormand_prince": (F + """c = [0, F(1, 5), F(3, 10), F(4, 5), F(8, 9), 1, 1]
A = [[],
     [F(1, 5)],
     [F(3, 40), F(9, 40)],
     [F(44, 45), F(-56, 15), F(32, 9)],
     [F(19372, 6561), F(-25360, 2187), F(64448, 6561), F(-212, 729)],
     [F(9017, 3168), F(-355, 33), F(46732, 5247), F(49, 176), F(-5103, 18656)],
     [F(35, 384), 0, F(500, 1113), F(125, 192), F(-2187, 6784), F(11, 84)]]
b = [F(35, 384), 0, F(500, 1113), F(125, 192), F(-2187, 6784), F(11, 84), 0]
b_hat = [F(5179, 57600), 0, F(7571, 16695), F(393, 640), F(-92097, 339200), F(187, 2100), F(1, 40)]
""", (5, 4)),
    "tsitouras": (F + """c = [0.0, 0.161, 0.327, 0.9, 0.9800255409045097, 1.0, 1.0]
A = [[],
     [0.161],
     [-0.008480655492356989, 0.335480655492357],
     [2.8971530571054935, -6.359448489975075, 4.3622954328695815],
     [5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525],
     [5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401, -0.028269050394068383],
     [0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081, 2.324710524099774]]
b = [0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081, 2.324710524099774, 0.0]
b_hat = [0.09468075576583945, 0.009183565540343254, 0.4877705284247616, 1.234297566930479, -2.7077123499835256,
         1.866628418170587, 1/66]
""", (5, 4)),
    "ssp_rk3": (F + "A = [[0, 0, 0], [1, 0, 0], [F(1, 4), F(1, 4), 0]]\nb = [F(1, 6), F(1, 6), F(2, 3)]\n"
                "c = [0, 1, F(1, 2)]\n", (3,)),
    "gauss_legendre_2": (F + """r3 = np.sqrt(3)
A = [[F(1, 4), F(1, 4) - r3 / 6], [F(1, 4) + r3 / 6, F(1, 4)]]
b = [F(1, 2), F(1, 2)]
c = [F(1, 2) - r3 / 6, F(1, 2) + r3 / 6]
""", (4,)),
    "gauss_legendre_3": (F + """r = np.sqrt(15)
A = [[F(5, 36), F(2, 9) - r / 15, F(5, 36) - r / 30],
     [F(5, 36) + r / 24, F(2, 9), F(5, 36) - r / 24],
     [F(5, 36) + r / 30, F(2, 9) + r / 15, F(5, 36)]]
b = [F(5, 18), F(4, 9), F(5, 18)]
c = [F(1, 2) - r / 10, F(1, 2), F(1, 2) + r / 10]
""", (6,)),
}
# nodepy's names for the same methods (its loadRKM('All') keys), for the cross-check
NODEPY = {"euler": "FE", "midpoint": "Mid22", "heun": "Heun22", "rk4": "RK44", "ssp_rk3": "SSP33",
          "bogacki_shampine": "BS3", "dormand_prince": "DP5", "tsitouras": "Tsit5", "gauss_legendre_2": "GL2",
          "gauss_legendre_3": "GL3"}
