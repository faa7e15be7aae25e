"""The solver's spectral derivatives with each field transformed once (``well_upao.predict.solver``).

On a fully periodic grid every derivative of the solver's right-hand side is spectral: with ``F`` the discrete
Fourier transform over all spatial axes (real-to-complex on the last, ``torch.fft.rfftn``),

    d^p f / d x_a^p = F^-1[(i k_a)^p F[f]],    Lap f = F^-1[-(k_1^2 + ... + k_d^2) F[f]],

the Nyquist mode of an even axis getting no odd derivative: the values of ``Stencils(grid, "spectral")``
(``well_upao.physics.stencils``), to round-off. ``SpectralFields`` is that ``Stencils`` with the transforms the
right-hand side repeats taken once: ``Stencils`` transforms a field again for every derivative, along one axis at a
time and as complex numbers; here a field's spectrum is kept while the right-hand side is evaluated (``forget``
drops them), each derivative is one inverse transform and the Laplacian one, not one per axis.

The de-aliasing grid's state comes with its spectrum (``interpolated``): Fourier interpolation onto the finer grid
pads the coarse spectrum with zeros, so the fine fields are never transformed again; ``truncated`` takes a fine
field's kept modes back. Both follow ``well_upao.physics.resample`` (the modes ``|k| < min(n, m) / 2`` of each axis
kept, values scaled by ``m / n``), to round-off.

On the de-aliasing grid the right-hand side's terms are wanted only as their kept modes (``truncated_spectrum``),
so there (``deferring``) a derivative is left in Fourier space, a ``SpectralTerm``: ``(i k)^p F[f]``, and the
terms of a rate are summed there. A term is transformed back only where the right-hand side reads its values (a
product of a derivative with a field, any torch function); a term given back to a derivative is differentiated in
Fourier space. The rate's spectrum is then the sum of its terms' spectra and ``F`` of the sum of those read as
values, where evaluating every term and transforming the sum back took one inverse transform per derivative and one
forward transform per rate: the same values to round-off (each derivative's spectrum is that of a real field, so
the round trip ``F F^-1`` is the identity on it), about half the transforms of the shear-flow replica's step.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence

import torch

from well_upao.physics.stencils import Grid, Stencils


def spatial_axes(f: torch.Tensor, dims: int) -> tuple[int, ...]:
    """The tensor axes of the last ``dims`` (spatial) dimensions of ``f``."""
    return tuple(range(f.ndim - dims, f.ndim))


def resized_spectrum(spectrum: torch.Tensor, shape_in: Sequence[int], shape_out: Sequence[int]) -> torch.Tensor:
    """The ``rfftn`` spectrum over the last ``len(shape_in)`` axes of a field on ``shape_in`` moved to ``shape_out``:
    along each axis the modes ``|k| < min(n, m) / 2`` kept (``kept = (min(n, m) + 1) // 2``: ``0 .. kept - 1`` and
    ``-(kept - 1) .. -1``; the last axis stores only ``0 .. kept - 1``), the rest zero, scaled by ``prod(m / n)`` so
    the inverse transform on ``shape_out`` keeps the values' size (``well_upao.physics.resample``)."""
    dims = len(shape_in)
    out = spectrum
    for offset, (n_in, n_out) in enumerate(zip(shape_in, shape_out, strict=True)):
        axis = spectrum.ndim - dims + offset
        if n_in == n_out:
            continue
        kept = (min(n_in, n_out) + 1) // 2
        if offset == dims - 1:  # the real-to-complex axis: 0 .. n // 2
            size = n_out // 2 + 1
            positive = out.narrow(axis, 0, kept)
            gap = list(out.shape)
            gap[axis] = size - kept
            out = torch.cat([positive, out.new_zeros(gap)], dim=axis)
        else:
            positive = out.narrow(axis, 0, kept)
            negative = out.narrow(axis, n_in - (kept - 1), kept - 1)
            gap = list(out.shape)
            gap[axis] = n_out - 2 * kept + 1
            out = torch.cat([positive, out.new_zeros(gap), negative], dim=axis)
    return out * math.prod(m / n for n, m in zip(shape_in, shape_out, strict=True))


def wavenumbers(shape: Sequence[int], spacing: Sequence[float], dtype: torch.dtype, device) -> list[torch.Tensor]:
    """Each axis's angular wavenumbers ``2 pi j / (n h)`` in the ``rfftn`` layout (the last axis ``0 .. n // 2``),
    shaped to broadcast over a spectrum of ``shape``; the same values as ``Stencils``'s (``fftfreq`` with
    ``d = h / (2 pi)``)."""
    dims, out = len(shape), []
    for axis, (n, h) in enumerate(zip(shape, spacing, strict=True)):
        length = n * h
        d = length / (2 * math.pi * n)
        last = axis == dims - 1
        k = (torch.fft.rfftfreq if last else torch.fft.fftfreq)(n, d=d, dtype=dtype, device=device)
        view = [1] * dims
        view[axis] = k.numel()
        out.append(k.reshape(view))
    return out


class SpectralFields(Stencils):
    """``Stencils(grid, "spectral")`` on a fully periodic grid that keeps each field's spectrum (see the module
    docstring): ``remember`` a field with the spectrum it is known to have (``None``: the field is zero),
    ``forget`` them all once the right-hand side is evaluated."""

    def __init__(self, grid: Grid):
        if not all(grid.periodic):
            raise ValueError("SpectralFields needs a fully periodic grid")
        super().__init__(grid, "spectral")
        #: ``id(field) -> (field, its spectrum or None for a zero field)``; the field is held so its id stays its own
        self._spectra: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = {}
        self._multipliers: dict[tuple, torch.Tensor] = {}
        #: derivatives returned as ``SpectralTerm`` (``deferring``) rather than transformed back
        self.deferred = False

    @contextlib.contextmanager
    def deferring(self) -> Iterator[None]:
        """Within: every derivative is a ``SpectralTerm`` (see the module docstring)."""
        previous, self.deferred = self.deferred, True
        try:
            yield
        finally:
            self.deferred = previous

    def remember(self, field: torch.Tensor, spectrum: torch.Tensor | None) -> None:
        self._spectra[id(field)] = (field, spectrum)

    def forget(self) -> None:
        self._spectra.clear()

    def spectrum(self, field: torch.Tensor | SpectralTerm) -> torch.Tensor | None:
        """``rfftn`` of ``field`` over its spatial axes, taken once while remembered (``None``: a zero field); a
        ``SpectralTerm``'s own."""
        if isinstance(field, SpectralTerm):
            return field.spectral()
        known = self._spectra.get(id(field))
        if known is not None and known[0] is field:
            return known[1]
        spectrum = torch.fft.rfftn(field, dim=spatial_axes(field, self.grid.dims))
        self.remember(field, spectrum)
        return spectrum

    def multiplier(self, shape: tuple[int, ...], axis: int | None, order: int, spectrum: torch.Tensor) -> torch.Tensor:
        """``(i k_axis)^order`` (the Nyquist mode of an even axis zero for odd orders); ``axis=None``, ``order=2``:
        the Laplacian's ``-|k|^2``."""
        key = (shape, axis, order, spectrum.dtype, spectrum.device)
        if key not in self._multipliers:
            real = torch.float64 if spectrum.dtype == torch.complex128 else torch.float32
            ks = wavenumbers(shape, self.grid.spacing, real, spectrum.device)
            if axis is None:
                value = -sum(k**2 for k in ks)
            else:
                value = (1j * ks[axis]) ** order
                n = shape[axis]
                if order % 2 == 1 and n % 2 == 0:
                    index = [0] * len(shape)
                    index[axis] = n // 2
                    value = value.clone()
                    value[tuple(index)] = 0
            self._multipliers[key] = value.to(spectrum.dtype)
        return self._multipliers[key]

    def _inverse(self, field: torch.Tensor | SpectralTerm, axis: int | None, order: int) -> torch.Tensor | SpectralTerm:
        spectrum = self.spectrum(field)
        axes = spatial_axes(field, self.grid.dims)
        shape = tuple(field.shape[a] for a in axes)
        if spectrum is None:
            if self.deferred:
                return SpectralTerm(None, field.shape, field.dtype, field.device, self.grid.dims)
            return torch.zeros_like(field)
        derivative = spectrum * self.multiplier(shape, axis, order, spectrum)
        if self.deferred:
            return SpectralTerm(derivative, field.shape, field.dtype, field.device, self.grid.dims)
        return torch.fft.irfftn(derivative, s=shape, dim=axes).to(field.dtype)

    def _spectral(self, f: torch.Tensor, axis: int, order: int) -> torch.Tensor:
        self._tensor_axis(f, axis)  # checks the axis
        return self._inverse(f, axis, order)

    def laplacian(self, f: torch.Tensor) -> torch.Tensor:
        """``F^-1[-|k|^2 F[f]]``: one inverse transform."""
        return self._inverse(f, None, 2)


def interpolated(field: torch.Tensor, shape: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``field`` Fourier-interpolated onto ``shape`` (its last ``len(shape)`` axes, ``fourier_resample``'s values to
    round-off) and the ``rfftn`` spectrum of the result."""
    dims = len(shape)
    shape_in = tuple(field.shape[-dims:])
    spectrum = resized_spectrum(torch.fft.rfftn(field, dim=spatial_axes(field, dims)), shape_in, shape)
    return torch.fft.irfftn(spectrum, s=tuple(shape), dim=spatial_axes(field, dims)), spectrum


def truncated_spectrum(field: torch.Tensor | SpectralTerm, shape: Sequence[int]) -> torch.Tensor:
    """The ``rfftn`` spectrum on ``shape`` of ``field`` resampled there (the kept modes of its spectrum); a
    ``SpectralTerm``'s without transforming it back."""
    dims = len(shape)
    shape_in = tuple(field.shape[-dims:])
    if isinstance(field, SpectralTerm):
        spectrum = field.spectral()
        if spectrum is None:  # a zero rate
            last = (*field.shape[:-1], field.shape[-1] // 2 + 1)
            spectrum = torch.zeros(last, dtype=_complex(field.dtype), device=field.device)
        return resized_spectrum(spectrum, shape_in, shape)
    return resized_spectrum(torch.fft.rfftn(field, dim=spatial_axes(field, dims)), shape_in, shape)


def _complex(dtype: torch.dtype) -> torch.dtype:
    return torch.complex128 if dtype == torch.float64 else torch.complex64


def _per_sample(value: object, dims: int) -> bool:
    """Whether ``value`` multiplies a field pointwise alike at every grid point (a number, or a tensor whose spatial
    axes all have size 1: a per-sample coefficient such as ``nu`` of shape ``(B, 1, 1)``)."""
    if isinstance(value, int | float):
        return True
    return isinstance(value, torch.Tensor) and not value.is_complex() and all(n == 1 for n in value.shape[-dims:])


class SpectralTerm:
    """A term of a right-hand side kept as ``F[term]`` (``SpectralFields.deferring``): ``spectrum`` (``rfftn``
    layout; ``None``: zero) plus ``values``, terms that were only ever values (``None``: none), the sum of both being
    the term. Sums, differences, negation and multiplication by per-sample coefficients stay deferred; anything else
    (a product with a field, a torch function, an attribute of a tensor) reads the term's values, one inverse
    transform, kept."""

    def __init__(
        self,
        spectrum: torch.Tensor | None,
        shape: torch.Size | tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device,
        dims: int,
        values: torch.Tensor | None = None,
    ):
        self.spectrum, self.values, self.dims = spectrum, values, dims
        self.shape, self.dtype, self.device = torch.Size(shape), dtype, device
        self._read: torch.Tensor | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _axes(self) -> tuple[int, ...]:
        return spatial_axes(self, self.dims)

    def spectral(self) -> torch.Tensor | None:
        """``rfftn`` of the term: the deferred spectrum plus that of its values (``None``: the term is zero)."""
        if self.values is None:
            return self.spectrum
        transformed = torch.fft.rfftn(self.values, dim=self._axes())
        return transformed if self.spectrum is None else self.spectrum + transformed

    def materialize(self) -> torch.Tensor:
        """The term's values on the grid (one inverse transform, kept)."""
        if self._read is None:
            if self.spectrum is None:
                read = (
                    torch.zeros(self.shape, dtype=self.dtype, device=self.device)
                    if self.values is None
                    else self.values
                )
            else:
                spatial = self.shape[-self.dims :]
                read = torch.fft.irfftn(self.spectrum, s=spatial, dim=self._axes()).to(self.dtype)
                read = read if self.values is None else read + self.values
            self._read = read
        return self._read

    # -------------------------------------------------------------- arithmetic that stays in Fourier space
    def _with(self, spectrum: torch.Tensor | None, values: torch.Tensor | None) -> SpectralTerm:
        return SpectralTerm(spectrum, self.shape, self.dtype, self.device, self.dims, values)

    def __add__(self, other: object) -> SpectralTerm | torch.Tensor:
        if isinstance(other, SpectralTerm):
            spectrum = _plus(self.spectrum, other.spectrum)
            return self._with(spectrum, _plus(self.values, other.values))
        if isinstance(other, int | float) and other == 0:  # ``sum``'s start
            return self
        if isinstance(other, torch.Tensor) and torch.broadcast_shapes(other.shape, self.shape) == self.shape:
            return self._with(self.spectrum, _plus(self.values, other.expand(self.shape)))
        return self.materialize() + other

    __radd__ = __add__

    def __neg__(self) -> SpectralTerm:
        return self._with(_times(self.spectrum, -1), _times(self.values, -1))

    def __sub__(self, other: object) -> SpectralTerm | torch.Tensor:
        return self + (-other)

    def __rsub__(self, other: object) -> SpectralTerm | torch.Tensor:
        return (-self) + other

    def __mul__(self, other: object) -> SpectralTerm | torch.Tensor:
        if _per_sample(other, self.dims):
            return self._with(_times(self.spectrum, other), _times(self.values, other))
        return self.materialize() * other

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> SpectralTerm | torch.Tensor:
        if _per_sample(other, self.dims):
            return self._with(_over(self.spectrum, other), _over(self.values, other))
        return self.materialize() / other

    # -------------------------------------------------------------- everything else reads the values
    def __rtruediv__(self, other: object) -> torch.Tensor:
        return other / self.materialize()

    def __pow__(self, exponent: object) -> torch.Tensor:
        return self.materialize() ** exponent

    def __rpow__(self, base: object) -> torch.Tensor:
        return base ** self.materialize()

    def __pos__(self) -> torch.Tensor:
        return self.materialize()

    def __getitem__(self, index) -> torch.Tensor:
        return self.materialize()[index]

    def __lt__(self, other: object) -> torch.Tensor:
        return self.materialize() < other

    def __le__(self, other: object) -> torch.Tensor:
        return self.materialize() <= other

    def __gt__(self, other: object) -> torch.Tensor:
        return self.materialize() > other

    def __ge__(self, other: object) -> torch.Tensor:
        return self.materialize() >= other

    def __abs__(self) -> torch.Tensor:
        return self.materialize().abs()

    def __getattr__(self, name: str):
        if name.startswith("_") or name.endswith("_"):  # private (no recursion before ``__init__`` ran) or in place:
            raise AttributeError(f"SpectralTerm has no {name!r} (an in-place change would miss its spectrum)")
        return getattr(self.materialize(), name)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """``tensor * term``, ``tensor + term`` and ``tensor - term`` (torch asks the term) stay deferred; any other
        torch function reads the terms' values."""
        if not kwargs and len(args) == 2 and func in _ARITHMETIC:
            a, b = args
            if func is torch.Tensor.sub:
                return a - b if isinstance(a, SpectralTerm) else b.__rsub__(a)
            term, other = (a, b) if isinstance(a, SpectralTerm) else (b, a)
            return term * other if func is torch.Tensor.mul else term + other

        def read(value):
            if isinstance(value, SpectralTerm):
                return value.materialize()
            if isinstance(value, list | tuple):
                return type(value)(read(v) for v in value)
            return value

        return func(*read(args), **{k: read(v) for k, v in (kwargs or {}).items()})


_ARITHMETIC = (torch.Tensor.mul, torch.Tensor.add, torch.Tensor.sub)


def _plus(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    return b if a is None else a if b is None else a + b


def _times(a: torch.Tensor | None, factor: object) -> torch.Tensor | None:
    return None if a is None else a * factor


def _over(a: torch.Tensor | None, divisor: object) -> torch.Tensor | None:
    return None if a is None else a / divisor
