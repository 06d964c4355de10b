"""Fit Surprise's SVD (default settings) on one train/test split; print JSON.

Executed by ``surprise_cv.py`` with the peer's own interpreter.
Input: an .npz with train/test rows, cols, values.
"""

import json
import sys
import time

import numpy as np


def main(path, seed):
    import pandas as pd
    from surprise import SVD, Dataset, Reader

    d = np.load(path)
    df = pd.DataFrame({"u": d["tr_rows"], "i": d["tr_cols"], "r": d["tr_vals"]})
    data = Dataset.load_from_df(df, Reader(rating_scale=(1, 5)))
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
    main(sys.argv[1], int(sys.argv[2]))
