"""scikit-learn style estimator base: parameters, cloning, fitted checks."""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from .context import FitContext, resolve_fit_context
from .device import DeviceLike
from .exceptions import NotFittedError
from .persistence import load_estimator, save_estimator
from .validation import validate_params

__all__ = ["BaseEstimator", "check_is_fitted", "clone"]


class BaseEstimator:
    """Base of every embedopt estimator.

    ``__init__`` only stores its arguments; all work is in ``fit``, which
    validates parameters (against ``_parameter_constraints``) before any work,
    and returns ``self``. Fitted attributes end with ``_``.
    """

    _parameter_constraints: ClassVar[dict] = {}

    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Return the estimator's parameters.

        Parameters
        ----------
        deep : bool
            Unused; present for scikit-learn compatibility.

        Returns
        -------
        dict
        """
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params) -> BaseEstimator:
        """Set parameters (validated at the next ``fit``).

        Parameters
        ----------
        **params
            Parameter values by name.

        Returns
        -------
        self
        """
        valid = set(self._get_param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}. "
                    f"Valid parameters are: {sorted(valid)}."
                )
            setattr(self, name, value)
        return self

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted estimator to ``path``, without pickle.

        The file is a ZIP archive of ``.npy`` arrays and one JSON document
        (parameters, fitted attributes, versions, checksums); loading it
        executes nothing. ``callback`` is not stored (it loads as None). The
        format is described in ``embedopt._core.persistence`` and
        DEVELOPERS.md.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write; an existing file is replaced.

        Raises
        ------
        NotFittedError
            If the estimator is not fitted (only fitted estimators are saved).
        InvalidParameterError
            If a parameter holds what the file cannot store (a custom loss
            object, a callable, a module of a class of your own): give it by
            name, or pickle the estimator instead; or if ``path`` is empty.
        IsADirectoryError, FileNotFoundError
            If ``path`` is a folder, or its folder does not exist.

        See Also
        --------
        load : the class method that reads the file back.
        embedopt.load : reads the file of any embedopt estimator.
        """
        save_estimator(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, device: DeviceLike = None) -> Any:
        """Read an estimator of this class written by :meth:`save`.

        Predictions of the loaded estimator are bitwise those of the saved one
        (on the same device).

        Parameters
        ----------
        path : str or os.PathLike
        device : {"cpu", "cuda", "cuda:N"} or torch.device, optional
            Where its tensors go. Default: the device each tensor was saved
            from when it is available here, else the CPU.

        Returns
        -------
        BaseEstimator
            An instance of this class, fitted.

        Raises
        ------
        DataValidationError
            If the file is missing, truncated, altered, of a newer format
            version (upgrade embedopt), not an embedopt model, or holds another
            estimator (load that with ``embedopt.load``).
        """
        return load_estimator(path, expected=cls, device=device)

    def _store_params(self, arguments: dict[str, Any]) -> None:
        """Store each ``__init__`` argument under its own name.

        Every estimator's ``__init__`` only stores its arguments (DESIGN.md);
        reading the names from the signature, the same list
        :meth:`get_params` reads, keeps the two in lockstep, so a parameter
        can neither be forgotten nor stored under a different name.

        Parameters
        ----------
        arguments : dict
            The ``__init__`` frame's ``locals()``; names that are not
            parameters (``self``) are ignored.
        """
        for name in self._get_param_names():
            setattr(self, name, arguments[name])

    def _start_fit(self) -> FitContext:
        """The first two steps of every ``fit``: check the parameters, then
        resolve ``random_state``, ``device`` and ``dtype`` (DESIGN.md: before
        any work, once).

        Returns
        -------
        FitContext
        """
        self._validate_params()
        # state built from a fitted model (a recommender's item index) would
        # serve the old model after this fit
        vars(self).pop("item_index_", None)
        return resolve_fit_context(self)

    @contextlib.contextmanager
    def _unchanged_on_error(self) -> Iterator[None]:
        """Put the attributes back as they were if the block raises.

        For methods that change a fitted model (``partial_fit``): the block
        must replace attributes, never modify the objects they hold in place.
        """
        state = dict(vars(self))
        try:
            yield
        except BaseException:
            vars(self).clear()
            vars(self).update(state)
            raise

    def _param_values(self, names) -> dict[str, Any]:
        """The values of the parameters ``names``, by name.

        For the parameters an estimator hands to its solver unchanged, under
        the same names: listing the names once keeps the call and the list
        of forwarded parameters from drifting apart.

        Parameters
        ----------
        names : iterable of str

        Returns
        -------
        dict
        """
        return {name: getattr(self, name) for name in names}

    def _store_result(
        self,
        result,
        history: dict | None = None,
        *,
        solver: str | None = None,
        objective: float | None = None,
    ) -> None:
        """Copy a solver's ``SolverResult`` to the fitted attributes.

        Sets the attributes every estimator exposes (DESIGN.md): ``history_``
        (``history`` where the estimator reshaped the solver's), ``n_iter_``,
        ``stop_reason_``, ``solver_`` (the solver that ran, ``"auto"``
        resolved) and ``objective_`` where the method has one.

        Parameters
        ----------
        result : SolverResult
        history : dict, optional
            Replaces ``result.history``.
        solver : str, optional
            The registry name of the solver that ran; sets ``solver_``.
        objective : float, optional
            The final objective; by default the last finite entry of the
            history's ``"objective"`` column when it has one (else the
            attribute is left unset).
        """
        self.history_ = result.history if history is None else history
        self.n_iter_ = result.n_iter
        self.stop_reason_ = result.stop_reason
        if solver is not None:
            self.solver_ = solver
        if objective is None:
            objective = _last_finite(self.history_, "objective")
        if objective is not None:
            self.objective_ = float(objective)
        else:  # a refit of a method without one must not keep an old value
            vars(self).pop("objective_", None)

    def __sklearn_tags__(self) -> Any:
        """What scikit-learn's tools (``clone``, ``cross_val_score``,
        ``Pipeline``) need to know of this estimator.

        scikit-learn is optional: this is only called by scikit-learn itself
        (1.6 and newer), so it imports it here. The inputs of most estimators
        are not feature matrices (entries, comparisons, interactions), hence
        ``two_d_array`` is True only where ``_sklearn_2d_input`` says so;
        estimators with ``transform`` are tagged as transformers.
        """
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=False),
            transformer_tags=TransformerTags() if hasattr(self, "transform") else None,
            input_tags=InputTags(two_d_array=self._sklearn_2d_input),
        )

    #: whether ``fit`` takes a samples x features matrix (scikit-learn's tag)
    _sklearn_2d_input: ClassVar[bool] = False

    def _validate_params(self) -> None:
        validate_params(
            type(self).__name__, self.get_params(), self._parameter_constraints
        )

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self._get_param_names():
            default = sig.parameters[name].default
            value = getattr(self, name)
            if default is inspect.Parameter.empty or not _same(value, default):
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _last_finite(history, key: str) -> float | None:
    """The last finite entry of ``history[key]`` (None when there is none)."""
    if not isinstance(history, dict) or key not in history:
        return None
    values = np.asarray(history[key], dtype=float).ravel()
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else None


def _same(a, b) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:
        return False


def clone(estimator: BaseEstimator) -> BaseEstimator:
    """Return an unfitted copy of ``estimator`` with the same parameters.

    Parameters
    ----------
    estimator : BaseEstimator
        Fitted or not. Its parameters are deep-copied, but callables (a
        ``callback``, a custom loss function) are shared.

    Returns
    -------
    BaseEstimator
        A new instance of the same class.
    """
    params = {
        k: copy.deepcopy(v) if not callable(v) else v
        for k, v in estimator.get_params().items()
    }
    return type(estimator)(**params)


def check_is_fitted(estimator: BaseEstimator, attribute: str) -> None:
    """Raise :class:`NotFittedError` if ``attribute`` is missing.

    Parameters
    ----------
    estimator : BaseEstimator
    attribute : str
        A fitted attribute that ``fit`` always sets.
    """
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet. Call "
            "'fit' with appropriate arguments before using this estimator."
        )
