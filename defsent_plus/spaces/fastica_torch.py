"""Parallel FastICA's fixed-point iterations in PyTorch (the GPU path of the ``ica`` transform).

The same update and stopping rule as scikit-learn's ``_ica_par``, on whitened data in its dtype; whitening, the
initial matrix and the final unmixing stay with :mod:`defsent_plus.spaces.transforms`, which checks this against
scikit-learn in its tests.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from scipy import linalg
from threadpoolctl import ThreadpoolController

from defsent_plus.errors import DefSentError

TORCH_NONLINEARITIES = ("logcosh", "exp", "cube")
TORCH_CPU_BLOCK_ROWS = 4096  # rows per block on CPU: keeps the [block, hidden] intermediate in cache (GPU: all)


def torch_parallel_fastica(whitened: np.ndarray, w_init: np.ndarray, *, fun: str = "logcosh", alpha: float = 1.0,
                           max_iter: int = 1000, tol: float = 1e-4, device: str = "cpu"
                           ) -> tuple[np.ndarray, int, bool]:
    """Parallel FastICA on whitened data [n, k] (float64 or float32); returns (W, n_iter, converged). The update:
    W <- sym_decorrelation(E[g(W x) x^T] - E[g'(W x)] W) until max_i | |<w_i', w_i>| - 1 | < tol."""
    nonlinearity = _torch_nonlinearity(fun, alpha)
    X = torch.from_numpy(np.ascontiguousarray(whitened)).to(device)
    W = _sym_decorrelation(torch.from_numpy(w_init).to(device=device, dtype=X.dtype))
    block_rows = X.shape[0] if X.is_cuda else TORCH_CPU_BLOCK_ROWS
    converged, n_iter = False, 0
    # numpy/scipy BLAS only serves the small eigh here: one thread (multi-threaded LAPACK on a few-hundred
    # matrix is slower, and pathologically so when the cores are shared with other jobs).
    with ThreadpoolController().limit(limits=1, user_api="blas"):
        while not converged and n_iter < max_iter:
            n_iter += 1
            g_x_moment, g_prime_mean = _nonlinearity_moments(X, W, nonlinearity, block_rows)
            W_next = _sym_decorrelation(g_x_moment - g_prime_mean[:, None] * W)
            change = (torch.einsum("ij,ij->i", W_next, W).abs() - 1).abs().max().item()
            W = W_next
            converged = change < tol
    return W.cpu().numpy(), n_iter, converged


def _torch_nonlinearity(fun: str, alpha: float) -> Callable:
    """FastICA's contrast function as y [rows, k] -> (g(y) [rows, k], column sums of g'(y) [k]).

    y is overwritten (logcosh works in place, as scikit-learn does).
    """
    if fun == "logcosh":
        if not 1 <= alpha <= 2:
            raise DefSentError("transform 'ica'", f"fun_args alpha must be in [1, 2], got {alpha}")

        def logcosh(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            g = torch.tanh_(y if alpha == 1 else y.mul_(alpha))
            squares = torch.linalg.vector_norm(g, dim=0).square_()
            return g, alpha * (g.shape[0] - squares)  # sum of alpha * (1 - g^2)

        return logcosh
    if fun == "exp":

        def exp(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            squared = y * y
            gauss = torch.exp(-squared / 2)
            return y * gauss, ((1 - squared) * gauss).sum(dim=0)

        return exp
    if fun == "cube":
        return lambda y: (y**3, 3 * (y * y).sum(dim=0))
    raise DefSentError("transform 'ica'", f"unknown fun {fun!r}")


def _nonlinearity_moments(X: torch.Tensor, W: torch.Tensor, nonlinearity: Callable, block_rows: int
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """E[g(W x) x^T] [k, k] and E[g'(W x)] [k] over the rows x of X, accumulated block by block."""
    n_samples, k = X.shape
    g_x = torch.zeros((W.shape[0], k), dtype=X.dtype, device=X.device)
    g_prime = torch.zeros(W.shape[0], dtype=X.dtype, device=X.device)
    for start in range(0, n_samples, block_rows):
        block = X[start : start + block_rows]
        g, g_prime_sums = nonlinearity(block @ W.T)
        g_x.addmm_(g.T, block)
        g_prime += g_prime_sums
    return g_x / n_samples, g_prime / n_samples


def _sym_decorrelation(W: torch.Tensor) -> torch.Tensor:
    """W <- (W W^T)^{-1/2} W (eigh on the GPU when W is there, else scipy LAPACK as in scikit-learn)."""
    gram = W @ W.T
    if W.is_cuda:
        s, u = torch.linalg.eigh(gram)
    else:
        s, u = (torch.from_numpy(part) for part in linalg.eigh(gram.numpy()))
    s = s.clamp(min=torch.finfo(W.dtype).tiny)
    return (u * s.rsqrt()) @ u.T @ W
