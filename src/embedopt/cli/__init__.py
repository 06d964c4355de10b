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

sdp
    Nonparametric kernel learning / colored MVU as low-rank SDPs on a1a, the
    digits or a synthetic set; prints the convergence table and the Rand index
    (1-NN accuracy for CMVU).
similarity
    All-pairs two-tower training on MovieLens (implicit feedback); prints
    the convergence table and the test ranking metrics.

Every command draws its convergence plot with ``--plot FILE``, writes its
results with ``--json FILE``, and fails with one ``embedopt: error: ...`` line
and exit status 2 (``--debug`` or ``EMBEDOPT_DEBUG=1`` show the traceback).

One module per command (``completion``, ``ordinal``, ``quantization``,
``sdp``, ``similarity``), each with ``COMMAND``, ``HELP`` and ``DESCRIPTION`` (the
sub-command's name and texts), ``add_arguments(parser)`` (adds its options to
an ``argparse.ArgumentParser``) and ``run(args) -> int`` (runs it on the
parsed ``argparse.Namespace``, prints its tables and returns the exit status);
``_parser.COMMANDS`` lists them and ``_parser.main`` handles errors, warnings
and closed pipes for all. Checked option types, option groups, CSV reading,
plots and JSON output they share are in ``_common`` (see DEVELOPERS.md, "A new
command").
"""

from ._parser import build_parser, main

__all__ = ["build_parser", "main"]
