"""``ranking.py --weights``: confidence weights from the ratings (``sample_weight``).

The split and the metrics of ``ranking.py`` (every rating a positive pair,
per-user 80/20 split, exact top-10 over all items with the training pairs
excluded), ``TwoTowerModel()`` with its defaults and embedding towers, fitted

- without weights (the default), and
- with iALS's confidence ``c = 1 + alpha r`` of each training pair (r its
  rating, 1 to 5) as ``sample_weight``: ``"raw"`` as is, and ``"mean 1"``
  divided by its mean over the training pairs (so that the observed pairs
  keep their total weight against the imputed ones, and only their relative
  weights change; the raw form also scales the observed term against omega
  and lam by the mean confidence), and
- ``"constant"``, the control of the raw form: every pair weighted by the
  mean of ``1 + alpha r`` (the same scale, no information from the ratings:
  the same as dividing omega and lam by it).

For each form, alpha is chosen among ``--alphas`` by P@10 on a validation
split inside the training pairs (``_common.inner_split``: an eighth of each
user's training pairs), never on the test pairs; the chosen alpha is then
refitted on all training pairs and scored on the test pairs. Everything
else (k, omega, lam, solver, seed) is the same in every fit. Medians over
``--seeds`` seeds (each its own split and start).
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np
from _common import inner_split, ranking

import _shared

K = 10


def _split(name: str, seed: int):
    """The per-user 80/20 split of ``ranking.py`` (same pairs: the split
    depends on the users and the seed only), with the ratings as values."""
    from embedopt.data import load_movielens_side_features, split_by_user

    e = load_movielens_side_features(dataset=name).ratings.entries
    return split_by_user((e.rows, e.cols, e.values), (0.8, 0.2), random_state=seed)


#: The weighted forms (each has its alpha chosen on validation).
FORMS = ("raw", "constant", "mean 1")


def _confidence(ratings: np.ndarray, form: str, alpha: float):
    if form == "none":
        return None
    c = 1.0 + alpha * ratings
    if form == "constant":
        return np.full_like(c, c.mean())
    return c / c.mean() if form == "mean 1" else c


def _fit_score(train, test, form: str, alpha: float, seed: int) -> dict:
    from embedopt.similarity import TwoTowerModel

    weight = _confidence(train.values, form, alpha)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter
        model = TwoTowerModel(
            user_tower="embedding", item_tower="embedding", random_state=seed
        ).fit((train.users, train.items), sample_weight=weight)
    seconds = time.perf_counter() - t0
    out = ranking(model.user_embeddings_, model.item_embeddings_, train, test, K)
    return {**out, "fit_s": seconds, "n_iter": model.n_iter_}


def _one_seed(name: str, seed: int, alphas: list[float]) -> dict:
    """Validation P@10 of every (form, alpha) and the test metrics of the
    default and of each form's validation-chosen alpha."""
    train, test = _split(name, seed)
    fit, val = inner_split(train, seed)
    candidates = [("none", 0.0)] + [(form, a) for form in FORMS for a in alphas]
    val_p = {c: _fit_score(fit, val, *c, seed)[f"P@{K}"] for c in candidates}
    chosen = {"none": ("none", 0.0)}
    for form in FORMS:
        chosen[form] = max((c for c in candidates if c[0] == form), key=val_p.get)
    tests = {form: _fit_score(train, test, *c, seed) for form, c in chosen.items()}
    return {"val": val_p, "chosen": chosen, "test": tests}


def _tables(runs: list[dict], alphas: list[float]) -> str:
    med = statistics.median
    val_rows = [["none", "-", f"{med(r['val'][('none', 0.0)] for r in runs):.4f}"]]
    for form in FORMS:
        for a in alphas:
            val_rows.append(
                [form, f"{a:g}", f"{med(r['val'][(form, a)] for r in runs):.4f}"]
            )
    headers = ["confidence", f"P@{K}", f"R@{K}", f"nDCG@{K}", f"MAP@{K}", "fit s"]
    test_rows = []
    for form in ("none", *FORMS):
        picks = ", ".join(f"{r['chosen'][form][1]:g}" for r in runs)
        label = "none (default)" if form == "none" else f"{form}, alpha {picks}"
        cells = [f"{med(r['test'][form][h] for r in runs):.4f}" for h in headers[1:5]]
        fit_s = med(r["test"][form]["fit_s"] for r in runs)
        test_rows.append([label, *cells, f"{fit_s:.1f}"])
    return (
        "Validation P@10 (median over seeds), per form and alpha:\n\n"
        + _shared.markdown_table(["form", "alpha", f"val P@{K}"], val_rows)
        + "\n\nTest metrics (median over seeds) of the validation-chosen alpha "
        "(per seed):\n\n" + _shared.markdown_table(headers, test_rows)
    )


def run(args) -> int:
    """The comparison with ``ranking.py``'s parsed arguments (``--data``,
    ``--seed``, ``--seeds``, ``--alphas``, ``--quick``, ``--out``)."""
    name = args.data or ("100k" if args.quick else "1m")
    n_seeds = args.seeds or (1 if args.quick else 3)
    runs = []
    for seed in range(args.seed, args.seed + n_seeds):
        runs.append(_one_seed(name, seed, args.alphas))
        print(f"seed {seed} done", flush=True)
    md = (
        f"MovieLens-{name}, implicit feedback, per-user 80/20 split, seeds "
        f"{args.seed}..{args.seed + n_seeds - 1}, TwoTowerModel() defaults, "
        "embedding towers\n\n" + _tables(runs, args.alphas)
    )
    print(md)
    stem = f"similarity_weights_{name}" + ("_quick" if args.quick else "")
    rows = [
        {
            "val": {f"{f}/{a:g}": v for (f, a), v in r["val"].items()},
            "chosen": {f: c[1] for f, c in r["chosen"].items()},
            "test": r["test"],
        }
        for r in runs
    ]
    _shared.write(stem, args.out, vars(args), {"seeds": rows}, md)
    return 0
