"""Product-quantization kernels, re-exported from :mod:`embedopt.linalg.codebooks`.

k-means per subspace, encoding and ADC search moved down to ``linalg`` so that
the recommenders' item index (:mod:`embedopt.nn.index`) scans codes with the
same kernels; this module keeps the old import path working.
"""

from ..linalg.codebooks import (
    adc_search,
    adc_tables,
    assign,
    check_n_subquantizers,
    decode,
    kmeans_plusplus,
    lloyd,
    random_init,
    split,
)

__all__ = [
    "adc_search",
    "adc_tables",
    "assign",
    "check_n_subquantizers",
    "decode",
    "kmeans_plusplus",
    "lloyd",
    "random_init",
    "split",
]
