"""Fit Surprise's SVD (default settings) on one train/test split; print JSON.

Executed by ``surprise_cv.py`` and ``link_prediction.py`` with the peer's own
interpreter.
Input: an .npz with train/test rows, cols, values.
"""

import json
import sys
import time

import numpy as np


def main(path, seed, scale=(1, 5), scores=False):
    import pandas as pd
    from surprise import SVD, Dataset, Reader

    d = np.load(path)
    df = pd.DataFrame({"u": d["tr_rows"], "i": d["tr_cols"], "r": d["tr_vals"]})
    data = Dataset.load_from_df(df, Reader(rating_scale=scale))
    t0, c0 = time.perf_counter(), time.process_time()
    algo = SVD(random_state=seed)
    algo.fit(data.build_full_trainset())
    pred = np.array(
        [
            algo.predict(u, i, clip=not scores).est
            for u, i in zip(d["te_rows"], d["te_cols"], strict=True)
        ]
    )
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    rmse = float(np.sqrt(np.mean((pred - d["te_vals"]) ** 2)))
    out = {"rmse": rmse, "seconds": secs, "cpu_seconds": cpu}
    if scores:  # the unclipped predictions themselves (link_prediction.py)
        out["scores"] = pred.tolist()
    print(json.dumps(out))


if __name__ == "__main__":
    # optional: the rating scale (low, high); MovieLens 100K / 1M use 1..5;
    # then "--scores": also print the unclipped test predictions
    argv = [a for a in sys.argv if a != "--scores"]
    scale = tuple(float(x) for x in argv[3:5]) if len(argv) > 4 else (1, 5)
    main(argv[1], int(argv[2]), scale, scores="--scores" in sys.argv)
