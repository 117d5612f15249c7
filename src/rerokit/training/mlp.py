"""One MLP engine: forward and backward of K ``nn.Sequential`` MLPs at once, and the three
gradient quantities rerokit needs from them.

Model: ``nn.Sequential`` of an optional leading ``Flatten``, ``Linear`` layers and activations
of :data:`rerokit.training.models.ACTIVATIONS`, cross-entropy loss. For a linear layer
``z = W a + b`` the gradient of sample i's loss is ``delta_i a_i^T`` (weight) and ``delta_i``
(bias), with ``delta_i = dl_i / dz_i``. So one forward (recording each layer's input ``a``) and
one backward (``delta`` of the logits = softmax - onehot; closed-form activation derivatives for
elu, relu, tanh, sigmoid, autograd for the others such as GELU) give, without ever forming the
(n, P) per-sample gradient matrix:

* ``||g_i||^2 = sum_layers ||delta_i||^2 (||a_i||^2 + 1[bias])``, hence per-sample clipping
  factors and clipped weighted sums ``sum_i v_i clip_C(g_i) = sum_layers (v c delta)^T a``
  ("ghost clipping": Goodfellow 2015, arXiv:1510.01799; Li et al. 2022, ICLR, Sec. 4):
  :meth:`MLPPlan.clipped_sums`, the DP-SGD step of :mod:`rerokit.training.engine`;
* with ``C = None`` and no weights, the plain full-batch gradient sum, whose mean is the GD
  step of RecoNN's shadow models (Balle et al. 2022, Sec. V-A(b), Table V):
  :meth:`MLPPlan.mean_grads`;
* ``<clip_C(g_i), gbar> = c_i sum_layers delta_i . (Gbar_W a_i + gbar_b)`` and
  ``||clip_C(g_i)||^2``, the candidate statistics of the prior-aware attack (Hayes et al. 2023,
  Alg. 2): :meth:`MLPPlan.candidate_statistics`.

Layout and shared inputs. Activations are stored features-major, ``(K, width, n)`` (K models, n
samples). Inputs come in blocks of columns (:meth:`MLPPlan.block`): a block ``(G, n_b, d)`` is
used by ``K / G`` consecutive models per group, so a set shared by all K models (G = 1: RecoNN's
fixed D-) is one tensor, never copied K times, and its first layer for all models is one matrix
product ``(K * h, d + 1) @ (d + 1, n_b)`` with the bias folded in as a column of ones; per-model
data is G = K; the T steps of one audit trial share its candidates (G = trials, K = trials * T).
Blocks are concatenated along the columns (:meth:`MLPPlan.inputs`). Checked against
``torch.func`` per-sample gradients in ``tests/training/test_mlp.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from rerokit._validate import check_instance
from rerokit.training.grads import CLIP_EPS
from rerokit.training.models import ACTIVATIONS, FunctionalModel

__all__ = ["MLPPlan", "MLPInputs", "mlp_plan"]


@dataclass(frozen=True)
class _Linear:
    """Where one ``nn.Linear`` sits in the flat ``theta``: weight ``theta[w0:w1]`` viewed (out, inp), bias ``theta[b0:b1]``."""

    w0: int
    w1: int
    b0: int | None
    b1: int | None
    out: int
    inp: int

    @property
    def bias(self) -> bool:
        return self.b0 is not None


@dataclass
class _Block:
    """Prepared inputs of one block of columns: ``X`` (G, n, d1) and ``XT`` (G, d1, n) (d1 = d + 1
    with a column of ones when the first Linear has a bias), ``sq`` (G, n) = ||x||^2 (+ 1 with
    bias), ``Y`` (G, classes, n) one-hot labels (None without labels)."""

    X: torch.Tensor
    XT: torch.Tensor
    sq: torch.Tensor
    Y: torch.Tensor | None
    start: int = 0

    @property
    def groups(self) -> int:
        return int(self.X.shape[0])

    @property
    def n(self) -> int:
        return int(self.X.shape[1])


@dataclass
class MLPInputs:
    """Inputs of ``K`` models: blocks of columns (see the module docstring), ``n`` columns in all.

    Over all columns, per model ((K, ..., n), or (1, ..., n) when one block serves every model):
    ``sq0`` the squared norms ||a_i||^2 (+ 1 with bias) of the first Linear's input, ``Y`` the
    one-hot labels (None without labels).
    """

    blocks: list[_Block]
    K: int
    n: int
    sq0: torch.Tensor | None = None
    Y: torch.Tensor | None = None

    def per_model(self, name: str) -> torch.Tensor:
        """A per-block tensor (G, ..., n_b) as (K, ..., n) over all columns (shared blocks broadcast).

        Args:
          name: the block attribute to gather, e.g. ``"sq"`` or ``"Y"``.

        Returns:
          The tensor over all n columns: (K, ..., n), or the block's own (1, ..., n) tensor when one
          block serves every model.
        """
        if len(self.blocks) == 1 and self.blocks[0].groups in (1, self.K):
            return getattr(self.blocks[0], name)
        parts = []
        for b in self.blocks:
            t = getattr(b, name)
            parts.append(t.unsqueeze(1).expand(b.groups, self.K // b.groups, *t.shape[1:]).reshape(self.K, *t.shape[1:]))
        return torch.cat(parts, -1)


class _Tape:
    """What the backward needs from a forward: each Linear's input (None for the first, whose
    input is the prepared blocks), each activation's (z, act(z)), and the logits (K, c, n)."""

    __slots__ = ("ins", "acts", "logits")

    def __init__(self, ins: list, acts: list, logits: torch.Tensor):
        self.ins, self.acts, self.logits = ins, acts, logits


def _act_forward(act: nn.Module, z: torch.Tensor) -> torch.Tensor:
    """act(z) without touching z (in-place activations run on a copy: the backward needs z)."""
    return act(z.clone() if getattr(act, "inplace", False) else z)


def _act_backward(act: nn.Module, z: torch.Tensor, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """u * act'(z), given h = act(z) (may overwrite u)."""
    kind = type(act)
    if kind is nn.ELU:
        if act.alpha == 1.0:  # z > 0: h + 1 = z + 1 > 1 -> 1; z <= 0: h + 1 = e^z <= 1
            return u.mul_((h + 1.0).clamp_(max=1.0))
        return u.mul_(torch.where(z > 0, torch.ones_like(z), h + act.alpha))
    if kind is nn.ReLU:
        return u.mul_((z > 0).to(u.dtype))
    if kind is nn.Tanh:
        return u.mul_(1 - h * h)
    if kind is nn.Sigmoid:
        return u.mul_(h * (1 - h))
    with torch.enable_grad():
        zz = z.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(act(zz), zz, grad_outputs=u)
    return g


def _clip_factors_from_sq(sq: torch.Tensor, C: float) -> torch.Tensor:
    """min(1, C / (||g|| + CLIP_EPS)) from squared norms (Opacus' factor, as ``grads.clip_factors``)."""
    return (C / (sq.sqrt() + CLIP_EPS)).clamp(max=1.0)


class MLPPlan:
    """One parse of an ``nn.Sequential`` of [Flatten], Linear and activation layers.

    Activations before the first Linear have no parameters: they are applied to the inputs once,
    in :meth:`block`.

    Args:
      fm: the :class:`~rerokit.training.models.FunctionalModel` whose module is parsed.

    Raises:
      TypeError: if ``fm`` is not a ``FunctionalModel``.
      ValueError: for any other module: not an ``nn.Sequential``, a layer other than a leading
        ``Flatten(1, -1)``, ``Linear`` and the supported activations, shared or extra parameters, or
        no Linear layer (see :func:`mlp_plan`).
    """

    def __init__(self, fm: FunctionalModel):
        check_instance("fm", fm, FunctionalModel)
        mod = fm.module
        if not isinstance(mod, nn.Sequential):
            raise ValueError("module is not an nn.Sequential")
        children = list(mod.named_children())
        if len(children) != len(mod):
            raise ValueError("a module appears twice in the Sequential")
        pos = {name: i for i, name in enumerate(fm.names)}
        off = fm.offsets
        self.has_flatten = False
        self.prefix: list[nn.Module] = []
        self.ops: list[_Linear | nn.Module] = []
        self.linears: list[_Linear] = []
        for i, (name, child) in enumerate(children):
            if isinstance(child, nn.Flatten):
                if i != 0 or child.start_dim != 1 or child.end_dim != -1:
                    raise ValueError("unsupported Flatten (only a leading Flatten(1, -1))")
                self.has_flatten = True
            elif isinstance(child, nn.Linear):
                wi, bi = pos.get(f"{name}.weight"), pos.get(f"{name}.bias")
                if wi is None or (child.bias is not None and bi is None):
                    raise ValueError(f"parameters of layer {name} are not the model's own (shared weights?)")
                lin = _Linear(off[wi], off[wi + 1], None if child.bias is None else off[bi],
                              None if child.bias is None else off[bi + 1], child.out_features, child.in_features)
                self.ops.append(lin)
                self.linears.append(lin)
            elif isinstance(child, tuple(ACTIVATIONS.values())):
                (self.ops if self.linears else self.prefix).append(child)
            else:
                raise ValueError(f"unsupported layer {type(child).__name__}")
        if not self.linears:
            raise ValueError("no Linear layer")
        if len(pos) != sum(1 + lin.bias for lin in self.linears):
            raise ValueError("module has parameters outside its Linear layers")
        self.num_params = fm.num_params
        self.num_classes = self.linears[-1].out

    # ------------------------------------------------------------------ inputs

    def block(self, X: torch.Tensor, y: torch.Tensor | None = None) -> _Block:
        """Prepare samples as one block of columns (once; reused at every step).

        Flattens (leading Flatten) or requires vectors, applies the parameter-free activations
        before the first Linear, appends a column of ones when the first Linear has a bias.

        Args:
          X: (G, n, ...) samples of G groups (G = 1: shared by every model).
          y: (G, n) integer labels, or None (then no gradients, only forward).

        Returns:
          The block, for :meth:`inputs`.

        Raises:
          ValueError: if the samples are not vectors and the model has no leading Flatten.
        """
        G, nb = int(X.shape[0]), int(X.shape[1])
        h = X.reshape(G, nb, -1) if self.has_flatten else X
        if h.dim() != 3:
            raise ValueError("per-sample inputs must be vectors: the model has no leading Flatten")
        for act in self.prefix:
            h = _act_forward(act, h)
        bias = self.linears[0].bias
        sq = (h * h).sum(-1) + (1.0 if bias else 0.0)
        Xa = torch.cat([h, torch.ones((G, nb, 1), dtype=h.dtype, device=h.device)], 2) if bias else h.contiguous()
        Y = None
        if y is not None:
            Y = F.one_hot(y.long(), self.num_classes).transpose(1, 2).to(h.dtype).contiguous()
        return _Block(X=Xa, XT=Xa.transpose(1, 2).contiguous(), sq=sq, Y=Y)

    def inputs(self, K: int, *blocks: _Block) -> MLPInputs:
        """The columns of ``K`` models: the blocks concatenated along the samples.

        Args:
          K: number of models; each block's group count G divides K, and model k uses group
            ``k // (K / G)`` of every block.
          *blocks: from :meth:`block`.

        Returns:
          The inputs of the K models (n = total columns).

        Raises:
          ValueError: if a block's group count does not divide ``K``.
        """
        out, start = [], 0
        for b in blocks:
            if K % b.groups:
                raise ValueError(f"a block of {b.groups} groups cannot serve K={K} models")
            out.append(_Block(b.X, b.XT, b.sq, b.Y, start))
            start += b.n
        inp = MLPInputs(out, int(K), start)
        inp.sq0 = inp.per_model("sq")
        if all(b.Y is not None for b in out):
            inp.Y = inp.per_model("Y")
        return inp

    # ------------------------------------------------------------------ forward / backward

    @staticmethod
    def _weight(lin: _Linear, theta: torch.Tensor) -> torch.Tensor:
        return theta[:, lin.w0 : lin.w1].reshape(theta.shape[0], lin.out, lin.inp)

    def _first_affine(self, theta: torch.Tensor, inp: MLPInputs) -> torch.Tensor:
        """(K, out, n): the first Linear of the K models (rows of ``theta``) on all columns; per
        block one (batched) matrix product, bias folded in, written in place into the output
        (under ``torch.compile``, which has no strided ``out=``, concatenated instead)."""
        lin, K = self.linears[0], theta.shape[0]
        Wa = self._weight(lin, theta)
        if lin.bias:
            Wa = torch.cat([Wa, theta[:, lin.b0 : lin.b1].unsqueeze(2)], 2)
        o, d1 = lin.out, Wa.shape[2]

        def product(b: _Block, out: torch.Tensor | None = None) -> torch.Tensor:
            G = b.groups
            if G == 1:
                return torch.mm(Wa.reshape(K * o, d1), b.XT[0], out=out)
            return torch.bmm(Wa.reshape(G, (K // G) * o, d1), b.XT, out=out)

        if len(inp.blocks) == 1:
            return product(inp.blocks[0]).view(K, o, inp.n)
        if torch.compiler.is_compiling():
            return torch.cat([product(b).view(K, o, b.n) for b in inp.blocks], 2)
        out = theta.new_empty((K, o, inp.n))
        for b in inp.blocks:
            dst = out[:, :, b.start : b.start + b.n]
            if b.groups == 1:
                product(b, out=dst.view(K * o, b.n))  # a strided out= costs no copy
            else:
                dst.copy_(product(b).view(K, o, b.n))
        return out

    def _affine(self, lin: _Linear, theta: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        W = self._weight(lin, theta)
        if lin.bias:
            return torch.baddbmm(theta[:, lin.b0 : lin.b1].unsqueeze(2), W, a)
        return torch.bmm(W, a)

    def forward(self, theta: torch.Tensor, inp: MLPInputs) -> _Tape:
        """Batched forward of K models, recording what :meth:`backward` needs.

        Args:
          theta: (K, P) flat parameters (``FunctionalModel`` layout).
          inp: the models' columns (:meth:`inputs`).

        Returns:
          The tape; ``tape.logits`` is (K, classes, n).
        """
        ins, acts, h = [], [], None
        for op in self.ops:
            if isinstance(op, _Linear):
                ins.append(h)
                h = self._first_affine(theta, inp) if h is None else self._affine(op, theta, h)
            else:
                out = _act_forward(op, h)
                acts.append((h, out))
                h = out
        return _Tape(ins, acts, h)

    def backward(self, theta: torch.Tensor, tape: _Tape, inp: MLPInputs) -> list[torch.Tensor]:
        """Per-sample deltas of every Linear, for the per-sample cross-entropy l_i.

        Starts from dl_i/dlogits = softmax - onehot; activations by closed-form derivatives
        (elu, relu, tanh, sigmoid) or autograd (others, e.g. GELU).

        Args:
          theta: (K, P) the parameters of the forward.
          tape: from :meth:`forward`.
          inp: the same inputs, with labels.

        Returns:
          ``[delta_1, ...]`` in layer order, each (K, out, n): dl_i/dz of that layer.
        """
        u = torch.softmax(tape.logits, dim=1).sub_(inp.Y)
        deltas: list[torch.Tensor] = [None] * len(self.linears)  # type: ignore[list-item]
        li, ai = len(self.linears), len(tape.acts)
        for op in reversed(self.ops):
            if isinstance(op, _Linear):
                li -= 1
                deltas[li] = u
                if li > 0:
                    u = torch.bmm(self._weight(op, theta).transpose(1, 2), u)
            else:
                ai -= 1
                z, h = tape.acts[ai]
                u = _act_backward(op, z, h, u)
        return deltas

    def _sq_norms(self, tape: _Tape, deltas: list[torch.Tensor], inp: MLPInputs) -> torch.Tensor:
        """(K, n): ||g_i||^2 = sum_layers ||delta_i||^2 (||a_i||^2 + 1[bias])."""
        sq = None
        for i in range(len(self.linears) - 1, -1, -1):
            lin, a, d = self.linears[i], tape.ins[i], deltas[i]
            a2 = inp.sq0 if i == 0 else (a * a).sum(1) + (1.0 if lin.bias else 0.0)
            term = (d * d).sum(1) * a2
            sq = term if sq is None else sq + term
        return sq

    # ------------------------------------------------------------------ gradient sums

    def _first_contract(self, dv: torch.Tensor, inp: MLPInputs) -> torch.Tensor:
        """(K, out, d1): sum_i dv_i x_i^T over all columns, per block one (batched) product."""
        K, o, _ = dv.shape
        res = None
        for b in inp.blocks:
            src = dv[:, :, b.start : b.start + b.n]
            G = b.groups
            if G == 1:
                r = torch.mm(src.reshape(K * o, b.n), b.X[0])
            else:
                r = torch.bmm(src.reshape(G, (K // G) * o, b.n), b.X)
            r = r.view(K, o, -1)
            res = r if res is None else res.add_(r)
        return res

    def _store(self, out: torch.Tensor, lin: _Linear, gW: torch.Tensor, gb: torch.Tensor | None) -> None:
        K = out.shape[0]
        out[:, lin.w0 : lin.w1] = gW.reshape(K, -1)
        if lin.bias:
            out[:, lin.b0 : lin.b1] = gb

    def _weighted_sum(self, tape, deltas, inp: MLPInputs, v: torch.Tensor | None) -> torch.Tensor:
        """(K, P): sum_i v_i g_i (v (K, n); None = all ones)."""
        K = deltas[0].shape[0]
        out = deltas[0].new_empty((K, self.num_params))
        for i, (lin, d) in enumerate(zip(self.linears, deltas)):
            dv = d if v is None else d * v.unsqueeze(1)
            if i == 0:
                g = self._first_contract(dv, inp)
                if lin.bias:
                    self._store(out, lin, g[:, :, : lin.inp], g[:, :, lin.inp])
                else:
                    self._store(out, lin, g, None)
            else:
                self._store(out, lin, torch.bmm(dv, tape.ins[i].transpose(1, 2)), dv.sum(2) if lin.bias else None)
        return out

    def _first_columns(self, inp: MLPInputs, idx: torch.Tensor) -> torch.Tensor:
        """(K, d1): model k's first-layer input at column idx[k]."""
        K = inp.K
        out = None
        for b in inp.blocks:
            j = (idx - b.start).clamp(0, b.n - 1)
            g = torch.zeros_like(idx) if b.groups == 1 else torch.arange(K, device=idx.device) // (K // b.groups)
            vals = b.X[g, j]
            if out is None:
                out = vals
            else:
                inside = (idx >= b.start) & (idx < b.start + b.n)
                out = torch.where(inside.unsqueeze(1), vals, out)
        return out

    def _sample_grad(self, tape, deltas, inp: MLPInputs, v: torch.Tensor | None, idx: torch.Tensor) -> torch.Tensor:
        """(K, P): v[k, idx_k] g_{k, idx_k}, the weighted gradient of one sample per model."""
        K = deltas[0].shape[0]
        ar = torch.arange(K, device=idx.device)
        out = deltas[0].new_empty((K, self.num_params))
        for i, (lin, d) in enumerate(zip(self.linears, deltas)):
            dt = d[ar, :, idx]
            if v is not None:
                dt = dt * v[ar, idx].unsqueeze(1)
            at = self._first_columns(inp, idx) if i == 0 else tape.ins[i][ar, :, idx]
            g = dt.unsqueeze(2) * at.unsqueeze(1)
            self._store(out, lin, g[:, :, : lin.inp] if lin.bias and i == 0 else g, dt if lin.bias else None)
        return out

    @torch.no_grad()
    def clipped_sums(self, theta: torch.Tensor, inp: MLPInputs, C: float | None, w: torch.Tensor | None = None,
                     target: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Per-sample clipped weighted sums (ghost clipping, Goodfellow 2015; Li et al. 2022).

        Args:
          theta: (K, P) parameters of the K models.
          inp: their columns (:meth:`inputs`), n in all, with labels.
          C: clipping norm (> 0, not validated here); None = no clipping.
          w: (K, n) per-sample weights (DP-SGD's batch mask); None = all ones.
          target: (K,) one column per model, or None.

        Returns:
          ``(s, s_target)``: ``s[k] = sum_i w[k, i] clip_C(g_{k,i})`` (K, P) and
          ``s_target[k] = w[k, t_k] clip_C(g_{k, t_k})`` (K, P), or None without ``target``.
        """
        tape = self.forward(theta, inp)
        deltas = self.backward(theta, tape, inp)
        v = w
        if C is not None:
            c = _clip_factors_from_sq(self._sq_norms(tape, deltas, inp), C)
            v = c if w is None else w * c
        s = self._weighted_sum(tape, deltas, inp, v)
        return s, None if target is None else self._sample_grad(tape, deltas, inp, v, target)

    @torch.no_grad()
    def mean_grads(self, theta: torch.Tensor, inp: MLPInputs) -> torch.Tensor:
        """Full-batch gradient of the mean cross-entropy over all n columns, for K models.

        The gradient descent step of RecoNN's shadow and released models (Balle et al. 2022,
        Sec. V-A(b), Table V), used through the training engine as ``clipped_sums(C=None) / n``.

        Args:
          theta: (K, P) parameters.
          inp: the columns of the K models (:meth:`inputs`), with labels.

        Returns:
          (K, P): ``(1/n) sum_i grad l(theta_k, z_i)``.
        """
        return self.clipped_sums(theta, inp, None)[0] / inp.n

    @torch.no_grad()
    def candidate_statistics(self, thetas: torch.Tensor, gbar: torch.Tensor, Xc: torch.Tensor, yc: torch.Tensor,
                             C: float, *, max_elements: int = 1 << 24) -> tuple[torch.Tensor, torch.Tensor]:
        """Prior-aware attack statistics of N candidates at every step (Hayes et al. 2023, Alg. 2).

        With delta = dl/dz and a each layer's input, ``<g, gbar> = sum_layers delta . (Gbar_W a +
        gbar_b)`` and ``||g||^2 = sum_layers ||delta||^2 (||a||^2 + 1)``, clip factor
        ``c = min(1, C / (||g|| + CLIP_EPS))``; no (T, N, P) gradient tensor is formed. A trial's
        T steps share its candidates (one block of T models per trial).

        Args:
          thetas: (k, T, P) parameters theta_t of k trials.
          gbar: (k, T, P) the vectors to score against (g-bar_t, or the noisy sums).
          Xc: (k, N, ...) each trial's candidates.
          yc: (k, N) their integer labels.
          C: clipping norm (> 0, not validated here).
          max_elements: trials are processed in chunks of about this many activations (default 2^24).

        Returns:
          ``(inner, sqnorm)``, each (k, T, N): ``<clip_C(g_{t,i}), gbar_t> / C^2`` and
          ``||clip_C(g_{t,i})||^2 / C^2``.
        """
        k, T, P = thetas.shape
        N = int(Xc.shape[1])
        width = max(max(max(lin.out, lin.inp) for lin in self.linears), 1)
        step = max(1, max_elements // max(1, T * N * width))
        inners, sqs = [], []
        for a in range(0, k, step):
            kk = min(k, a + step) - a
            inp = self.inputs(kk * T, self.block(Xc[a : a + kk].to(thetas.dtype), yc[a : a + kk]))
            th = thetas[a : a + kk].reshape(kk * T, P)
            gb = gbar[a : a + kk].reshape(kk * T, P)
            tape = self.forward(th, inp)
            deltas = self.backward(th, tape, inp)
            sq = self._sq_norms(tape, deltas, inp)
            raw = None
            for i, (lin, d) in enumerate(zip(self.linears, deltas)):
                p = self._first_affine(gb, inp) if i == 0 else self._affine(lin, gb, tape.ins[i])
                term = (d * p).sum(1)
                raw = term if raw is None else raw + term
            c = _clip_factors_from_sq(sq, C)
            inners.append((c * raw / (C * C)).reshape(kk, T, N))
            sqs.append((c * c * sq / (C * C)).reshape(kk, T, N))
        return torch.cat(inners), torch.cat(sqs)


def mlp_plan(fm: FunctionalModel) -> MLPPlan | None:
    """The :class:`MLPPlan` of ``fm``, or None if its module is not a supported MLP.

    Args:
      fm: the model.

    Returns:
      The plan, or None (e.g. a CNN, or a Sequential with other layers).

    Raises:
      TypeError: if ``fm`` is not a ``FunctionalModel``.
    """
    try:
        return MLPPlan(fm)
    except ValueError:
        return None
