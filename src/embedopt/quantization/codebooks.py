"""Product-quantization kernels, re-exported from :mod:`embedopt.linalg.codebooks`.

k-means per subspace, encoding and ADC search moved down to ``linalg`` so that
the recommenders' item index (:mod:`embedopt.nn.index`) scans codes with the
same kernels; this module keeps the old import path working, with the same
names (``__all__`` is the kernel module's own, so the two cannot drift).
"""

from ..linalg.codebooks import *  # noqa: F403
from ..linalg.codebooks import __all__  # noqa: F401
