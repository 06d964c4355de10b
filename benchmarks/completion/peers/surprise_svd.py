"""Fit Surprise's SVD (default settings) on one train/test split; print JSON.

Executed by ``surprise_cv.py`` with the peer's own interpreter.
Input: an .npz with train/test rows, cols, values.
"""

import json
import sys
import time

import numpy as np


def main(path, seed, scale=(1, 5)):
    import pandas as pd
    from surprise import SVD, Dataset, Reader

    d = np.load(path)
    df = pd.DataFrame({"u": d["tr_rows"], "i": d["tr_cols"], "r": d["tr_vals"]})
    data = Dataset.load_from_df(df, Reader(rating_scale=scale))
    t0 = time.perf_counter()
    algo = SVD(random_state=seed)
    algo.fit(data.build_full_trainset())
    pred = np.array(
        [
            algo.predict(u, i).est
            for u, i in zip(d["te_rows"], d["te_cols"], strict=True)
        ]
    )
    secs = time.perf_counter() - t0
    rmse = float(np.sqrt(np.mean((pred - d["te_vals"]) ** 2)))
    print(json.dumps({"rmse": rmse, "seconds": secs}))


if __name__ == "__main__":
    # optional: the rating scale (low, high); MovieLens 100K / 1M use 1..5
    scale = tuple(float(x) for x in sys.argv[3:5]) if len(sys.argv) > 4 else (1, 5)
    main(sys.argv[1], int(sys.argv[2]), scale)
