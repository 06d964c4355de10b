"""The ``embedopt`` command line (also ``python -m embedopt``).

Commands
--------
complete
    Matrix completion with AIS-Impute on the paper's synthetic problem (the
    default), a MovieLens dataset, or a CSV file of (row, col, value) triples;
    prints the convergence table and the test error.
ordinal
    Ordinal embedding from triplets with SVRG-SBB on the paper's synthetic
    problem (the default), the music-artist triplets, eurodist, or a CSV file
    of triplets/quadruplets; prints the convergence table and the held-out
    triplet error.
quantize
    Product quantization with a learned rotation (Givens coordinate descent vs
    OPQ...) on a correlated-Gaussian set (the default), GloVe, or a .npy /
    .fvecs file; prints the distortion per iteration of each method.

One module per command (``completion``, ``ordinal``, ``quantization``), each with
``COMMAND``, ``HELP`` and ``DESCRIPTION`` (the sub-command's name and texts),
``add_arguments(parser)`` (adds its options to an ``argparse.ArgumentParser``)
and ``run(args) -> int`` (runs it on the parsed ``argparse.Namespace``, prints
its tables and returns the exit status); ``_parser`` lists them. Options and
printing helpers they share are in ``_common``.
"""

from ._parser import build_parser, main

__all__ = ["build_parser", "main"]
